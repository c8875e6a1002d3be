package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
)

func bindingYAML(ns, name, instance, externalID, params string) string {
	y := fmt.Sprintf(`apiVersion: lockstep.dev/v1alpha1
kind: ServiceBinding
metadata:
  name: %s
  namespace: %s
spec:
  instanceName: %s
  externalID: %s
`, name, ns, instance, externalID)
	if params != "" {
		y += "  parameters: " + params + "\n"
	}
	return y
}

func getSecret(t *testing.T, ns, name string) (*corev1.Secret, bool) {
	t.Helper()
	var s corev1.Secret
	err := cluster.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &s)
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	require.NoError(t, err)
	return &s, true
}

func bindingExists(t *testing.T, ns, name string) bool {
	t.Helper()
	err := cluster.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &v1alpha1.ServiceBinding{})
	if apierrors.IsNotFound(err) {
		return false
	}
	require.NoError(t, err)
	return true
}

// boundInstance creates instance "db" in a new namespace.
func boundInstance(t *testing.T) (*fakebroker.Broker, string) {
	t.Helper()
	b := freshBroker(t)
	ns := namespace(t)
	r := kubectl(t, instanceWith(ns, "db", "small", ns+"-db", ""), "apply", "-f", "-")
	require.Equal(t, 0, r.ExitCode, r.Output())
	b.ResetCalls()
	return b, ns
}

func TestBindWritesTheCredentialsIntoAnOwnedSecret(t *testing.T) {
	b, ns := boundInstance(t)
	r := kubectl(t, bindingYAML(ns, "creds", "db", ns+"-creds", `{"role": "reader"}`), "apply", "-f", "-")
	require.Equal(t, 0, r.ExitCode, r.Output())
	assert.Contains(t, r.Stdout, "servicebinding.lockstep.dev/creds created")

	calls := b.Calls(fakebroker.OpBind)
	require.Len(t, calls, 1, "one bind call")
	assert.Equal(t, "/v2/service_instances/"+ns+"-db/service_bindings/"+ns+"-creds", calls[0].Path)
	assert.Equal(t, map[string]any{"role": "reader"}, calls[0].JSON["parameters"])
	held, ok := b.Binding(ns+"-db", ns+"-creds")
	require.True(t, ok)

	secret, ok := getSecret(t, ns, "creds")
	require.True(t, ok, "the Secret exists when kubectl returns")
	require.NotEmpty(t, held.Credentials)
	for k, v := range held.Credentials {
		assert.Equal(t, fmt.Sprint(v), string(secret.Data[k]), "credential %q", k)
	}

	var sb v1alpha1.ServiceBinding
	require.NoError(t, cluster.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "creds"}, &sb))
	require.Eventually(t, func() bool {
		s, _ := getSecret(t, ns, "creds")
		ref := metav1.GetControllerOf(s)
		return ref != nil && ref.UID == sb.UID && ref.Kind == "ServiceBinding"
	}, 10*time.Second, 50*time.Millisecond, "the Secret is owned by the binding")

	require.Eventually(t, func() bool {
		r := kubectl(t, "", "get", "servicebinding", "creds", "-n", ns)
		return strings.Contains(r.Stdout, "READY") && strings.Contains(r.Stdout, "True")
	}, 10*time.Second, 200*time.Millisecond, "kubectl get servicebinding shows it ready")

	r = kubectl(t, "", "delete", "serviceinstance", "db", "-n", ns, "--wait=false")
	assert.NotEqual(t, 0, r.ExitCode)
	assert.Contains(t, r.Stderr, `instance "db" still has 1 binding(s): creds`)
	assert.Contains(t, r.Stderr, "kubectl annotate servicebinding creds -n "+ns+" lockstep.dev/reconcile-policy=detach-on-delete",
		"the way out when the broker cannot unbind")
	assert.Nil(t, getInstance(t, ns, "db").DeletionTimestamp)
}

// TestLongNamesWorkEndToEnd: names of any valid length (here longer than a
// label value may be) bind, show ready, and unbind.
func TestLongNamesWorkEndToEnd(t *testing.T) {
	b := freshBroker(t)
	ns := namespace(t)
	inst := "db-" + strings.Repeat("i", 80)
	name := "creds-" + strings.Repeat("b", 80)
	r := kubectl(t, instanceWith(ns, inst, "small", ns+"-db", ""), "apply", "-f", "-")
	require.Equal(t, 0, r.ExitCode, r.Output())
	r = kubectl(t, bindingYAML(ns, name, inst, ns+"-creds", ""), "apply", "-f", "-")
	require.Equal(t, 0, r.ExitCode, r.Output())
	assert.Contains(t, r.Stdout, "servicebinding.lockstep.dev/"+name+" created")
	_, ok := b.Binding(ns+"-db", ns+"-creds")
	require.True(t, ok, "the broker holds the binding")
	_, ok = getSecret(t, ns, name)
	require.True(t, ok, "the Secret exists when kubectl returns")

	require.Eventually(t, func() bool {
		r := kubectl(t, "", "get", "servicebinding", name, "-n", ns, "-o", "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}")
		return r.Stdout == "True"
	}, 10*time.Second, 200*time.Millisecond, "the binding becomes ready")

	r = kubectl(t, "", "delete", "servicebinding", name, "-n", ns)
	require.Equal(t, 0, r.ExitCode, r.Output())
	r = kubectl(t, "", "delete", "serviceinstance", inst, "-n", ns)
	require.Equal(t, 0, r.ExitCode, r.Output())
	_, ok = b.Binding(ns+"-db", ns+"-creds")
	assert.False(t, ok, "unbound at the broker")
	_, ok = b.Instance(ns + "-db")
	assert.False(t, ok, "deprovisioned at the broker")
	require.Eventually(t, func() bool { _, ok := getSecret(t, ns, name); return !ok }, 10*time.Second, 100*time.Millisecond, "the Secret is gone")
}

func TestBindRefusedByTheBrokerCreatesNothing(t *testing.T) {
	b, ns := boundInstance(t)
	b.ScriptInstance(fakebroker.OpBind, ns+"-db", fakebroker.Respond{Status: http.StatusBadRequest, Error: "TooManyBindings", Description: "at most 5 bindings per instance"})
	r := kubectl(t, bindingYAML(ns, "creds", "db", ns+"-creds", ""), "apply", "-f", "-")
	assert.NotEqual(t, 0, r.ExitCode)
	assert.Contains(t, r.Stderr, `broker "acme" refused to bind instance "db" for binding "creds"`)
	assert.Contains(t, r.Stderr, "at most 5 bindings per instance")
	assert.Contains(t, r.Stderr, "nothing was created")
	assert.False(t, bindingExists(t, ns, "creds"))
	_, ok := getSecret(t, ns, "creds")
	assert.False(t, ok, "no Secret")
}

func TestBindNeverOverwritesAForeignSecret(t *testing.T) {
	b, ns := boundInstance(t)
	foreign := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds"}, Data: map[string][]byte{"mine": []byte("keep")}}
	require.NoError(t, cluster.client.Create(context.Background(), foreign))

	r := kubectl(t, bindingYAML(ns, "creds", "db", ns+"-creds", ""), "apply", "-f", "-")
	assert.NotEqual(t, 0, r.ExitCode)
	assert.Contains(t, r.Stderr, `Secret "creds" already exists in namespace "`+ns+`" and lockstep did not write it for this binding`)
	assert.Contains(t, r.Stderr, "the broker was not called")
	assert.Zero(t, b.Count(fakebroker.OpBind), "zero broker calls")
	s, _ := getSecret(t, ns, "creds")
	assert.Equal(t, map[string][]byte{"mine": []byte("keep")}, s.Data, "the foreign Secret is unchanged")
	assert.False(t, bindingExists(t, ns, "creds"))
}

func TestUnbindRefusedKeepsBindingAndSecret(t *testing.T) {
	b, ns := boundInstance(t)
	require.Equal(t, 0, kubectl(t, bindingYAML(ns, "creds", "db", ns+"-creds", ""), "apply", "-f", "-").ExitCode)

	b.ScriptInstance(fakebroker.OpUnbind, ns+"-db", fakebroker.Respond{Status: http.StatusUnprocessableEntity, Description: "credential store offline"})
	r := kubectl(t, "", "delete", "servicebinding", "creds", "-n", ns, "--wait=false")
	assert.NotEqual(t, 0, r.ExitCode)
	assert.Contains(t, r.Stderr, `broker "acme" refused to unbind binding "creds" of instance "db"`)
	assert.Contains(t, r.Stderr, "credential store offline")
	assert.Contains(t, r.Stderr, `the binding and its Secret "creds" stay as they were`)
	assert.True(t, bindingExists(t, ns, "creds"))
	_, ok := getSecret(t, ns, "creds")
	assert.True(t, ok)

	b.Reset() // the broker recovers
	retried(t, "", "delete", "servicebinding", "creds", "-n", ns, "--timeout=20s")
	assert.False(t, bindingExists(t, ns, "creds"))
	require.Eventually(t, func() bool { _, ok := getSecret(t, ns, "creds"); return !ok }, 10*time.Second, 50*time.Millisecond,
		"the Secret goes with the binding")
	_, held := b.Binding(ns+"-db", ns+"-creds")
	assert.False(t, held)

	r = kubectl(t, "", "delete", "serviceinstance", "db", "-n", ns, "--timeout=20s")
	require.Equal(t, 0, r.ExitCode, "without bindings the instance can go: %s", r.Output())
}

func TestAsyncBind(t *testing.T) {
	t.Run("completes within the budget", func(t *testing.T) {
		b, ns := boundInstance(t)
		b.ScriptInstance(fakebroker.OpBind, ns+"-db", fakebroker.Respond{Async: &fakebroker.Async{InProgressPolls: 2}})
		r := kubectl(t, bindingYAML(ns, "creds", "db", ns+"-creds", ""), "apply", "-f", "-")
		require.Equal(t, 0, r.ExitCode, r.Output())
		s, ok := getSecret(t, ns, "creds")
		require.True(t, ok, "the Secret is there when kubectl returns")
		held, _ := b.Binding(ns+"-db", ns+"-creds")
		assert.Equal(t, held.Credentials["password"], string(s.Data["password"]))
		assert.GreaterOrEqual(t, b.Count(fakebroker.OpGetBinding), 1, "credentials fetched with GET after the bind finished")
	})

	t.Run("still running at the budget: allowed, Secret follows", func(t *testing.T) {
		b, ns := boundInstance(t)
		b.ScriptInstance(fakebroker.OpBind, ns+"-db", fakebroker.Respond{Async: &fakebroker.Async{InProgressPolls: 40}})
		r := kubectl(t, bindingYAML(ns, "creds", "db", ns+"-creds", ""), "apply", "-f", "-")
		require.Equal(t, 0, r.ExitCode, r.Output())
		assert.Contains(t, r.Stderr, `Warning: broker "acme" is still working to bind instance "db" for binding "creds"`)
		assert.Contains(t, r.Stderr, `Secret "creds" appears when the broker finishes`)
		require.Eventually(t, func() bool { _, ok := getSecret(t, ns, "creds"); return ok }, 30*time.Second, 100*time.Millisecond)
	})

	t.Run("fails", func(t *testing.T) {
		b, ns := boundInstance(t)
		b.ScriptInstance(fakebroker.OpBind, ns+"-db", fakebroker.Respond{Async: &fakebroker.Async{InProgressPolls: 1, Fail: true, Description: "role backend rejected"}})
		r := kubectl(t, bindingYAML(ns, "creds", "db", ns+"-creds", ""), "apply", "-f", "-")
		assert.NotEqual(t, 0, r.ExitCode)
		assert.Contains(t, r.Stderr, "role backend rejected")
		assert.False(t, bindingExists(t, ns, "creds"))
		_, ok := getSecret(t, ns, "creds")
		assert.False(t, ok)
	})
}

func TestBindingSpecChangeIsRejected(t *testing.T) {
	b, ns := boundInstance(t)
	require.Equal(t, 0, kubectl(t, bindingYAML(ns, "creds", "db", ns+"-creds", `{"role": "reader"}`), "apply", "-f", "-").ExitCode)
	b.ResetCalls()

	r := kubectl(t, bindingYAML(ns, "creds", "db", ns+"-creds", `{"role": "writer"}`), "apply", "-f", "-")
	assert.NotEqual(t, 0, r.ExitCode)
	assert.Contains(t, r.Stderr, `The ServiceBinding "creds" is invalid: spec.parameters`)
	assert.Contains(t, r.Stderr, "delete and recreate")
	r = kubectl(t, "", "patch", "servicebinding", "creds", "-n", ns, "--type=merge", "-p", `{"spec":{"instanceName":"other"}}`)
	assert.NotEqual(t, 0, r.ExitCode)
	assert.Contains(t, r.Stderr, `spec.instanceName: Forbidden: create-only field: it cannot be changed after the ServiceBinding is created; `+
		`delete and recreate the ServiceBinding to change it`)
	assert.Empty(t, callsIn(b, ns), "no broker call")
}

func TestBindingChecksBeforeTheBroker(t *testing.T) {
	b, ns := boundInstance(t)
	require.Equal(t, 0, kubectl(t, instanceWith(ns, "fixed", "fixed", ns+"-fixed", ""), "apply", "-f", "-").ExitCode)
	b.ResetCalls()
	tests := []struct{ name, manifest, want string }{
		{"missing instance", bindingYAML(ns, "x", "nope", ns+"-x", ""), `spec.instanceName: Invalid value: "nope": no ServiceInstance of this name`},
		{"plan not bindable", bindingYAML(ns, "x", "fixed", ns+"-x", ""), `plan "fixed" of service "db" is not bindable`},
		{"parameters violating the bind schema", bindingYAML(ns, "x", "db", ns+"-x", `{"role": "owner"}`), "spec.parameters.role"},
		{"a template of unbounded iteration", bindingYAML(ns, "x", "db", ns+"-x", "") + "  secretTransforms:\n  - addKey: {key: x, template: '{{range 150000000}}{{end}}x'}\n",
			`spec.secretTransforms[0].addKey.template: Invalid value: "{{range 150000000}}{{end}}x": it may take 1200000015 steps, more than the 100000 a binding's templates and JSON paths may take together`},
		{"a template of unbounded output", bindingYAML(ns, "x", "db", ns+"-x", "") + "  secretTransforms:\n  - addKey: {key: x, template: '{{range 1000}}{{range 1000}}xxxxxxxx{{end}}{{end}}'}\n",
			`spec.secretTransforms[0].addKey.template: Invalid value:`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := kubectl(t, tt.manifest, "apply", "-f", "-")
			assert.NotEqual(t, 0, r.ExitCode)
			assert.Contains(t, r.Stderr, tt.want)
			assert.False(t, bindingExists(t, ns, "x"), "nothing persisted")
		})
	}
	assert.Zero(t, b.Count(fakebroker.OpBind))
}

// TestNoCredentialLeaks runs last in this file's order of concerns: it binds
// with credentials it knows and scans everything a person or a log
// collector could see.
func TestNoCredentialLeaks(t *testing.T) {
	b, ns := boundInstance(t)
	require.Equal(t, 0, kubectl(t, bindingYAML(ns, "creds", "db", ns+"-creds", ""), "apply", "-f", "-").ExitCode)
	held, ok := b.Binding(ns+"-db", ns+"-creds")
	require.True(t, ok)
	password := fmt.Sprint(held.Credentials["password"])
	require.NotEmpty(t, password)
	_ = kubectl(t, "", "delete", "servicebinding", "creds", "-n", ns, "--timeout=20s")

	seen := map[string]string{
		"webhook log": cluster.logs.String(),
		"events":      kubectl(t, "", "get", "events", "-A", "-o", "yaml").Output(),
		"bindings":    kubectl(t, "", "get", "servicebindings", "-A", "-o", "yaml").Output(),
		"instances":   kubectl(t, "", "get", "serviceinstances", "-A", "-o", "yaml").Output(),
		"brokers":     kubectl(t, "", "get", "servicebrokers", "-o", "yaml").Output(),
		"operations":  kubectl(t, "", "get", "brokeroperations", "-A", "-o", "yaml").Output(),
	}
	for where, text := range seen {
		assert.NotContains(t, text, password, "a credential appears in the %s", where)
	}
}
