package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// TestGuideServiceBinding runs docs/guide/service-binding.md as written,
// section by section, as TestReadmeWalkthrough runs the walkthrough, with
// the servicebinding.io CRD installed (test/e2e/testdata: the
// specification's reference runtime is not served by the module proxy
// here). Between the sections it checks lockstep's side of the contract
// as the specification states it: the ServiceBinding of servicebinding.io
// names a Provisioned Service, whose status.binding.name names a Secret
// in its namespace with the entries type and provider; the Deployment
// with the plain volume mount has the Secret at
// $SERVICE_BINDING_ROOT/<name>; status.binding.name is cleared while the
// Secret is missing; and no transformed value reaches lockstep's log,
// the binding, its operation records or events.
func TestGuideServiceBinding(t *testing.T) {
	awaitEmbeddedBroker(t)
	installServiceBindingCRD(t)
	ns := namespace(t)
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	kubeconfig := walkthroughKubeconfig(t, ns)
	section := func(heading string) {
		t.Helper()
		runSteps(t, docSection(t, "docs/guide/service-binding.md", heading), root, kubeconfig, ns, func(out string) string { return out })
	}
	ctx := context.Background()

	section("## Bind an instance for applications")
	section("## With a plain volume mount")
	section("## With a servicebinding.io implementation")

	// The duck type: what a servicebinding.io implementation reads.
	sb := &unstructured.Unstructured{}
	sb.SetGroupVersionKind(schema.GroupVersionKind{Group: "servicebinding.io", Version: "v1", Kind: "ServiceBinding"})
	require.NoError(t, cluster.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "orders-api-db"}, sb))
	service, _, _ := unstructured.NestedStringMap(sb.Object, "spec", "service")
	provisioned := &unstructured.Unstructured{}
	provisioned.SetAPIVersion(service["apiVersion"])
	provisioned.SetKind(service["kind"])
	require.NoError(t, cluster.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: service["name"]}, provisioned),
		"the service a servicebinding.io ServiceBinding names is lockstep's ServiceBinding")
	secretName, found, err := unstructured.NestedString(provisioned.Object, "status", "binding", "name")
	require.NoError(t, err)
	require.True(t, found && secretName != "", "a Provisioned Service has status.binding.name")

	var secret corev1.Secret
	require.NoError(t, cluster.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: secretName}, &secret),
		"status.binding.name names a Secret in the Provisioned Service's namespace")
	for key := range secret.Data {
		assert.Empty(t, validation.IsConfigMapKey(key), "entry %q is a file name in the projected directory", key)
	}
	assert.Equal(t, "postgresql", string(secret.Data["type"]), "the type entry, from spec.bindingType")
	assert.Equal(t, "embedded", string(secret.Data["provider"]), "the provider entry, the broker")
	username := string(secret.Data["username"])
	require.NotEmpty(t, username)
	uri := "postgresql://" + username + "@quick.example:5432/orders"
	assert.Equal(t, map[string]string{"database": "orders", "host": "quick.example", "port": "5432", "provider": "embedded",
		"type": "postgresql", "uri": uri, "username": username}, stringsOf(secret.Data))

	// The plain volume mount: the Secret at $SERVICE_BINDING_ROOT/orders-db.
	var app appsv1.Deployment
	require.NoError(t, cluster.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "orders-app"}, &app))
	assertProjected(t, app.Spec.Template.Spec, secretName, "orders-db")

	// A Secret that goes: status.binding is cleared, Ready says why.
	require.NoError(t, cluster.client.Delete(ctx, &secret))
	require.Eventually(t, func() bool {
		var b v1alpha1.ServiceBinding
		require.NoError(t, cluster.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "orders-db"}, &b))
		ready := meta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionReady)
		return b.Status.Binding == nil && ready != nil && ready.Reason == "CredentialsMissing"
	}, 20*time.Second, 200*time.Millisecond, "status.binding.name is cleared while the Secret is missing")

	// No transformed value anywhere but the Secret.
	var seen []string
	for _, what := range [][]string{
		{"get", "servicebindings.lockstep.dev", "orders-db", "-n", ns, "-o", "yaml"},
		{"get", "brokeroperations", "-n", ns, "-o", "yaml"},
		{"get", "events", "-n", ns, "-o", "yaml"},
	} {
		r := kubectl(t, "", what...)
		require.Equal(t, 0, r.ExitCode, r.Output())
		seen = append(seen, r.Output())
	}
	require.Contains(t, cluster.logs.String(), ns, "lockstep's log covers this test")
	assert.NotContains(t, cluster.logs.String()+strings.Join(seen, "\n"), uri, "a transformed value appears outside the Secret")

	section("## Secret transforms")
	section("## Clean up")
}

// assertProjected checks that a pod template has the Secret mounted at
// $SERVICE_BINDING_ROOT/<name> in every container, as the specification
// lays a binding out.
func assertProjected(t *testing.T, pod corev1.PodSpec, secretName, name string) {
	t.Helper()
	volume := ""
	for _, v := range pod.Volumes {
		if v.Secret != nil && v.Secret.SecretName == secretName {
			volume = v.Name
		}
	}
	require.NotEmpty(t, volume, "a volume of Secret %q", secretName)
	for _, c := range pod.Containers {
		root := ""
		for _, e := range c.Env {
			if e.Name == "SERVICE_BINDING_ROOT" {
				root = e.Value
			}
		}
		require.NotEmpty(t, root, "container %q has SERVICE_BINDING_ROOT", c.Name)
		mounted := false
		for _, m := range c.VolumeMounts {
			mounted = mounted || m.Name == volume && m.MountPath == root+"/"+name && m.ReadOnly
		}
		assert.True(t, mounted, "container %q mounts the Secret at $SERVICE_BINDING_ROOT/%s", c.Name, name)
	}
}

// installServiceBindingCRD installs the servicebinding.io ServiceBinding
// CRD for the test, and removes it after. kubectl resolves a kind that
// two groups define (here ServiceBinding) as its discovery orders them,
// which differs between users: the test's kubectl keeps its discovery
// cache apart (KUBECACHEDIR), and the CRD is gone from discovery before
// the next test, so that no other test's kubectl ever sees the second
// group.
func installServiceBindingCRD(t *testing.T) {
	t.Helper()
	t.Setenv("KUBECACHEDIR", t.TempDir())
	opts := envtest.CRDInstallOptions{Paths: []string{filepath.Join("testdata", "servicebinding.io_servicebindings.yaml")}}
	crds, err := envtest.InstallCRDs(cluster.config, opts)
	require.NoError(t, err)
	t.Cleanup(func() {
		opts.CRDs = crds
		require.NoError(t, envtest.UninstallCRDs(cluster.config, opts))
		dc, err := discovery.NewDiscoveryClientForConfig(cluster.config)
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			groups, err := dc.ServerGroups()
			if err != nil {
				return false
			}
			for _, g := range groups.Groups {
				if g.Name == "servicebinding.io" {
					return false
				}
			}
			return true
		}, 30*time.Second, 200*time.Millisecond, "the servicebinding.io group leaves discovery")
	})
}

func stringsOf(data map[string][]byte) map[string]string {
	out := make(map[string]string, len(data))
	for k, v := range data {
		out[k] = string(v)
	}
	return out
}
