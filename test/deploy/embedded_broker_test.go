package deploy

import (
	"strings"
	"testing"

	"github.com/kelseyhightower/envconfig"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded"
)

const withBroker = "with-embedded-broker"

// env returns a container's environment: literal values, and
// "secret:<name>/<key>" for a value from a Secret.
func containerEnv(t *testing.T, c any) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, e := range lookup(t, c, "env").([]any) {
		m := e.(map[string]any)
		switch {
		case m["value"] != nil:
			out[m["name"].(string)] = m["value"].(string)
		case m["valueFrom"] != nil && m["valueFrom"].(map[string]any)["secretKeyRef"] != nil:
			out[m["name"].(string)] = "secret:" + lookup(t, m, "valueFrom.secretKeyRef.name").(string) + "/" + lookup(t, m, "valueFrom.secretKeyRef.key").(string)
		default:
			out[m["name"].(string)] = ""
		}
	}
	return out
}

// TestTheEmbeddedBrokerRunsOutOfLockstepsPod: with the embedded broker,
// lockstep's pod stays as it is (no broker, no action), and the broker's
// own pod mounts no token, has no role, runs with only SETUID and SETGID
// added, needs credentials (from a Secret) over HTTPS, and runs actions as
// users of their own within limits; lockstep reaches it through a
// ServiceBroker that names that Secret in lockstep's namespace.
func TestTheEmbeddedBrokerRunsOutOfLockstepsPod(t *testing.T) {
	assert.Equal(t, find(t, "base", "Deployment", "lockstep").Object, find(t, withBroker, "Deployment", "lockstep").Object,
		"lockstep's own Deployment is deploy/base's: it runs no broker and no action")

	d := find(t, withBroker, "Deployment", "lockstep-embedded-broker")
	pod := lookup(t, d.Object, "spec.template.spec")
	assert.Equal(t, false, lookup(t, pod, "automountServiceAccountToken"), "no service account token in the pod")
	sa := find(t, withBroker, "ServiceAccount", lookup(t, pod, "serviceAccountName").(string))
	assert.Equal(t, false, field(t, sa, "automountServiceAccountToken"))
	for _, u := range env.rendered[withBroker] {
		if strings.HasSuffix(u.GetKind(), "RoleBinding") {
			for _, s := range field(t, u, "subjects").([]any) {
				assert.NotEqual(t, sa.GetName(), lookup(t, s, "name"), "no role is bound to the broker's service account")
			}
		}
	}
	assert.Equal(t, false, lookup(t, pod, "enableServiceLinks"))
	assert.Equal(t, "RuntimeDefault", lookup(t, pod, "securityContext.seccompProfile.type"))
	containers := lookup(t, pod, "containers").([]any)
	require.Len(t, containers, 1)
	c := containers[0]
	assert.Equal(t, []any{"/broker"}, lookup(t, c, "command"))
	assert.Equal(t, false, lookup(t, c, "securityContext.allowPrivilegeEscalation"))
	assert.Equal(t, true, lookup(t, c, "securityContext.readOnlyRootFilesystem"))
	assert.Equal(t, false, lookup(t, c, "securityContext.privileged"))
	assert.Equal(t, []any{"ALL"}, lookup(t, c, "securityContext.capabilities.drop"))
	assert.Equal(t, []any{"SETUID", "SETGID"}, lookup(t, c, "securityContext.capabilities.add"))

	vars := containerEnv(t, c)
	assert.Equal(t, "secret:lockstep-embedded-broker-auth/username", vars["LOCKSTEP_BROKER_USERNAME"], "basic auth, from a Secret")
	assert.Equal(t, "secret:lockstep-embedded-broker-auth/password", vars["LOCKSTEP_BROKER_PASSWORD"])
	assert.NotEmpty(t, vars["LOCKSTEP_BROKER_TLS_CERT_FILE"], "HTTPS")
	for k, v := range vars {
		t.Setenv(k, v)
	}
	var settings embedded.Settings
	require.NoError(t, envconfig.Process("LOCKSTEP_BROKER", &settings), "the broker reads its settings")
	assert.NotEmpty(t, settings.ActionUsers, "actions run as users of their own")
	assert.Equal(t, "/var/lib/lockstep-broker-work", settings.WorkDir)
	var mounts []string
	for _, m := range lookup(t, c, "volumeMounts").([]any) {
		mounts = append(mounts, lookup(t, m, "mountPath").(string))
	}
	assert.Contains(t, mounts, settings.WorkDir)
	assert.Contains(t, mounts, "/var/lib/lockstep-broker", "the bbolt store's directory")

	svc := find(t, withBroker, "Service", "lockstep-embedded-broker")
	assert.Equal(t, lookup(t, d.Object, "spec.selector.matchLabels"), field(t, svc, "spec.selector"))
	sb := find(t, withBroker, "ServiceBroker", "embedded")
	assert.Equal(t, "https://lockstep-embedded-broker.lockstep-system.svc", field(t, sb, "spec.url"))
	assert.Equal(t, map[string]any{"namespace": "lockstep-system", "name": "lockstep-embedded-broker-auth", "type": "basic"}, field(t, sb, "spec.authSecretRef"))
	var other []*unstructured.Unstructured
	for _, u := range env.rendered[withBroker] {
		if u.GetLabels()["app.kubernetes.io/component"] == "embedded-broker" {
			other = append(other, u)
		}
	}
	assert.Len(t, other, 3, "the broker's Deployment, Service and NetworkPolicy")
}
