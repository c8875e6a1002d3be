package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/osbclient"
	"github.com/lockstep-dev/lockstep/test/framework"
)

// TestGuideParametersFrom runs the guide page
// docs/guide/parameters-from-secrets.md as written, as TestReadmeWalkthrough runs the walkthrough.
func TestGuideParametersFrom(t *testing.T) {
	awaitEmbeddedBroker(t)
	ns := namespace(t)
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	runSteps(t, docSection(t, "docs/guide/parameters-from-secrets.md", ""), root, walkthroughKubeconfig(t, ns), ns, func(out string) string { return out })
}

// TestParametersFromSecretStaysSecret follows distinctive values from
// Secrets through an instance's life: provision, a refused change, a
// re-apply after the Secret changed, resync passes and the delete. Each
// value reaches the broker (or, refused, nobody) and appears nowhere else
// that lockstep writes: its log, the instance, its operation records,
// events, kubectl's answers.
func TestParametersFromSecretStaysSecret(t *testing.T) {
	awaitEmbeddedBroker(t)
	ns := namespace(t)
	first, second, refused := "pf-first-"+uuid.NewString()[:8], "pf-second-"+uuid.NewString()[:8], "pf-"+uuid.NewString()[:4]
	secret := func(name, value string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata: {name: %s, namespace: %s}\nstringData:\n  parameters: '{\"adminPassword\": %q}'\n", name, ns, value)
	}
	instance := func(generation int, secretName string) string {
		return fmt.Sprintf(`apiVersion: lockstep.dev/v1alpha1
kind: ServiceInstance
metadata: {name: vault, namespace: %s}
spec:
  brokerName: embedded
  serviceName: quick
  planName: small
  parameters: {size: 2, region: eu}
  parametersFromGeneration: %d
  parametersFrom:
  - secretKeyRef: {name: %s, key: parameters}
`, ns, generation, secretName)
	}
	var outputs []string
	run := func(stdin string, args ...string) result {
		r := kubectl(t, stdin, args...)
		outputs = append(outputs, r.Output())
		return r
	}

	// Refusals before anything exists: no Secret, then no key.
	r := run(instance(1, "admin"), "apply", "-f", "-")
	require.NotEqual(t, 0, r.ExitCode)
	assert.Contains(t, r.Stderr, `spec.parametersFrom[0].secretKeyRef.name: Invalid value: "admin": no Secret "admin" in namespace "`+ns+`"`)

	require.Equal(t, 0, run(secret("admin", first), "apply", "-f", "-").ExitCode)
	r = run(instance(1, "admin"), "apply", "-f", "-")
	require.Equal(t, 0, r.ExitCode, r.Output())
	si := getInstance(t, ns, "vault")
	assert.Equal(t, first, heldAdminPassword(t, si), "the broker holds the Secret's value")

	// A value the schema refuses (too short) is refused without being shown.
	require.Equal(t, 0, run(secret("weak", refused), "apply", "-f", "-").ExitCode)
	r = run(instance(1, "weak"), "apply", "-f", "-")
	require.NotEqual(t, 0, r.ExitCode)
	assert.Contains(t, r.Stderr, `spec.parameters.adminPassword`)
	assert.Contains(t, r.Stderr, `(the parameter comes from Secret "weak" key "parameters")`)

	// The Secret changes: nothing happens until the spec changes.
	fetched := embeddedFetches(si.Spec.ExternalID)
	require.Equal(t, 0, run(secret("admin", second), "apply", "-f", "-").ExitCode)
	awaitEmbeddedFetches(t, si.Spec.ExternalID, fetched+2)
	assert.Equal(t, first, heldAdminPassword(t, si), "a Secret's change alone changes nothing")
	r = run(instance(2, "admin"), "apply", "-f", "-")
	require.Equal(t, 0, r.ExitCode, r.Output())
	assert.Equal(t, second, heldAdminPassword(t, si), "a new parametersFromGeneration sends the Secret's current values")

	// Resync compares by digest: the instance stays in sync.
	awaitEmbeddedFetches(t, si.Spec.ExternalID, embeddedFetches(si.Spec.ExternalID)+2)
	require.Eventually(t, func() bool {
		got := getInstance(t, ns, "vault")
		c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionInSync)
		return got.Status.ObservedGeneration == got.Generation && c != nil && c.Status == "True" &&
			got.Status.LastApplied != nil && got.Status.LastApplied.ParametersDigest != "" && got.Status.LastApplied.CreateOnlyDigest != ""
	}, 20*time.Second, 200*time.Millisecond, "the instance is committed and in sync, compared by digest")

	// A binding takes its parameters from a Secret too.
	require.Equal(t, 0, run(fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata: {name: bind-role, namespace: %s}\nstringData:\n  parameters: '{\"role\": \"write\"}'\n", ns), "apply", "-f", "-").ExitCode)
	r = run(fmt.Sprintf(`apiVersion: lockstep.dev/v1alpha1
kind: ServiceBinding
metadata: {name: vault-creds, namespace: %s}
spec:
  instanceName: vault
  parametersFrom:
  - secretKeyRef: {name: bind-role, key: parameters}
`, ns), "apply", "-f", "-")
	require.Equal(t, 0, r.ExitCode, r.Output())
	creds, ok := getSecret(t, ns, "vault-creds")
	require.True(t, ok)
	assert.Equal(t, "write", string(creds.Data["role"]), "the bind received the role from the Secret")
	require.Eventually(t, func() bool {
		var b v1alpha1.ServiceBinding
		require.NoError(t, cluster.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "vault-creds"}, &b))
		return b.Status.ParametersDigest != ""
	}, 20*time.Second, 200*time.Millisecond, "the binding's status keeps the digest of what was sent")

	for _, what := range [][]string{
		{"get", "serviceinstance", "vault", "-n", ns, "-o", "yaml"},
		{"get", "brokeroperations", "-n", ns, "-o", "yaml"},
		{"get", "servicebinding", "vault-creds", "-n", ns, "-o", "yaml"},
		{"get", "events", "-n", ns, "-o", "yaml"},
		{"describe", "serviceinstance", "vault", "-n", ns},
	} {
		r := run("", what...)
		require.Equal(t, 0, r.ExitCode, r.Output())
	}
	require.Equal(t, 0, run("", "delete", "servicebinding", "vault-creds", "-n", ns, "--timeout=30s").ExitCode)
	require.Equal(t, 0, run("", "delete", "serviceinstance", "vault", "-n", ns, "--timeout=30s").ExitCode)

	logs := cluster.logs.String()
	require.Contains(t, logs, ns, "lockstep's log covers this test")
	everything := logs + strings.Join(outputs, "\n")
	for _, value := range []string{first, second, refused} {
		assert.NotContains(t, everything, value, "a value from a Secret appears in lockstep's log, an object, an event or a kubectl answer")
	}
}

func awaitEmbeddedBroker(t *testing.T) {
	t.Helper()
	require.Eventually(t, func() bool {
		var sb v1alpha1.ServiceBroker
		err := cluster.client.Get(context.Background(), client.ObjectKey{Name: "embedded"}, &sb)
		return err == nil && meta.IsStatusConditionTrue(sb.Status.Conditions, v1alpha1.ConditionReady)
	}, 30*time.Second, 200*time.Millisecond, "the embedded broker registers itself and its catalog loads")
}

// heldAdminPassword reads the instance from the embedded broker, as the
// OSB API lets anyone with the broker's address, and returns its
// adminPassword parameter.
func heldAdminPassword(t *testing.T, si *v1alpha1.ServiceInstance) string {
	t.Helper()
	var sb v1alpha1.ServiceBroker
	require.NoError(t, cluster.client.Get(context.Background(), client.ObjectKey{Name: "embedded"}, &sb))
	c, err := osbclient.New(osbclient.Config{URL: sb.Spec.URL, Timeout: 5 * time.Second})
	require.NoError(t, err)
	var service string
	for _, s := range sb.Status.Services {
		if s.Name == si.Spec.ServiceName {
			service = s.ID
		}
	}
	got, err := c.GetInstance(context.Background(), osbclient.RequestMeta{}, osbclient.GetInstanceRequest{InstanceID: si.Spec.ExternalID, ServiceID: service})
	require.NoError(t, err)
	var params struct {
		AdminPassword string `json:"adminPassword"`
	}
	require.NoError(t, json.Unmarshal(got.Parameters, &params))
	return params.AdminPassword
}

// TestParametersFromNeedsTheRightToReadTheSecret: a user who may create
// instances in a namespace but not read its Secrets cannot have a Secret
// sent to a broker; lockstep asks the API server (SubjectAccessReview)
// before it reads one for a request.
func TestParametersFromNeedsTheRightToReadTheSecret(t *testing.T) {
	awaitEmbeddedBroker(t)
	ns := namespace(t)
	ctx := context.Background()
	require.NoError(t, cluster.client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "admin", Namespace: ns},
		StringData: map[string]string{"parameters": `{"adminPassword":"not-for-mallory"}`}}))
	require.NoError(t, cluster.client.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "instances", Namespace: ns},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"serviceinstances"}, Verbs: []string{"get", "list", "create"}}}}))
	require.NoError(t, cluster.client.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "mallory", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "instances"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "mallory"}}}))
	kubeconfig := userKubeconfig(t, "mallory", ns)
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	manifest := fmt.Sprintf(`apiVersion: lockstep.dev/v1alpha1
kind: ServiceInstance
metadata: {name: sneaky, namespace: %s}
spec:
  brokerName: embedded
  serviceName: quick
  planName: small
  parametersFrom:
  - secretKeyRef: {name: admin, key: parameters}
`, ns)
	out := shell(t, root, kubeconfig, "kubectl apply -f - <<'EOF'\n"+manifest+"EOF")
	assert.Contains(t, out, `spec.parametersFrom[0].secretKeyRef.name: Forbidden: user "mallory" may not get Secret "admin" in namespace "`+ns+`"`)
	var list v1alpha1.ServiceInstanceList
	require.NoError(t, cluster.client.List(ctx, &list, client.InNamespace(ns)))
	assert.Empty(t, list.Items, "nothing was created")
}

// userKubeconfig writes a kubeconfig for a user with no groups, whose
// context's namespace is ns.
func userKubeconfig(t *testing.T, name, ns string) string {
	t.Helper()
	user, err := cluster.Env.AddUser(envtest.User{Name: name}, nil)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, framework.WriteKubeconfig(user.Config(), name, ns, path))
	return path
}

// embeddedFetches counts the fetches of an instance (GET
// /v2/service_instances/<id>) the embedded broker has logged.
func embeddedFetches(externalID string) int {
	// The embedded broker logs through lockstep's logger: the request's
	// method and path are fields of its "osb request" line.
	method, path := `"method": "GET"`, `"path": "/v2/service_instances/`+externalID+`"`
	n := 0
	for _, line := range strings.Split(cluster.logs.String(), "\n") {
		if strings.Contains(line, "osb request") && strings.Contains(line, method) && strings.Contains(line, path) {
			n++
		}
	}
	return n
}

// awaitEmbeddedFetches waits until the embedded broker has been asked for
// the instance n times in all: resync has read it from the broker again.
func awaitEmbeddedFetches(t *testing.T, externalID string, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return embeddedFetches(externalID) >= n }, 10*resyncInterval, 100*time.Millisecond,
		"resync never read instance %s from the embedded broker again", externalID)
}
