package plugin

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

func TestMarketplace(t *testing.T) {
	golden(t, "marketplace", lockstep(t, "", "marketplace", "--broker", "embedded"))
	golden(t, "marketplace-service", lockstep(t, "", "marketplace", "--service", "quick"))
	golden(t, "marketplace-none", lockstep(t, "", "marketplace", "--broker", "nobody"))
}

func TestDescribePlan(t *testing.T) {
	golden(t, "describe-plan", lockstep(t, "", "describe", "plan", "quick/small"))
	golden(t, "describe-plan-yaml", lockstep(t, "", "describe", "plan", "embedded.quick.small", "-o", "yaml"))
	golden(t, "describe-plan-unknown", lockstep(t, "", "describe", "plan", "quick/huge"))
}

// TestProvisionAndBind provisions and binds as a user would, with
// parameters from flags, a file and a Secret, and the refusals of the
// field policies and of the broker as they came.
func TestProvisionAndBind(t *testing.T) {
	ns := namespace(t, "plugin-provision")
	golden(t, "provision", lockstep(t, ns, "provision", "db", "--service", "quick", "--plan", "small", "-p", "region=eu", "-p", "size=2"))
	golden(t, "provision-invalid", lockstep(t, ns, "provision", "big", "--service", "quick", "--plan", "small", "-p", "size=40", "-p", "region=mars"))
	golden(t, "provision-refused", lockstep(t, ns, "provision", "flaky", "--service", "failing", "--plan", "default", "-p", "refuse=provision"))
	golden(t, "provision-twice", lockstep(t, ns, "provision", "twice", "--service", "quick", "--plan", "small", "-p", "size=2", "-p", "size=3"))

	// Parameters from a file and, for the secret one, from a Secret.
	params := filepath.Join(t.TempDir(), "params.yaml")
	require.NoError(t, os.WriteFile(params, []byte("region: us\nsize: 3\n"), 0o600))
	require.NoError(t, env.admin.Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-admin"},
		StringData: map[string]string{"parameters": `{"adminPassword":"staple-battery-horse"}`}}))
	golden(t, "provision-from-secret", lockstep(t, ns, "provision", "secure", "--service", "quick", "--plan", "small",
		"--param-file", params, "--from-secret", "db-admin"))
	var secure v1alpha1.ServiceInstance
	require.NoError(t, env.admin.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "secure"}, &secure))
	assert.JSONEq(t, `{"region":"us","size":3}`, string(secure.Spec.Parameters.Raw), "the Secret's value is not in the object")
	assert.Equal(t, []v1alpha1.ParametersFromSource{{SecretKeyRef: v1alpha1.SecretKeyReference{Name: "db-admin", Key: "parameters"}}}, secure.Spec.ParametersFrom)

	golden(t, "bind", lockstep(t, ns, "bind", "db-creds", "--instance", "db", "-p", "role=read"))
	golden(t, "bind-refused", lockstep(t, ns, "bind", "nowhere-creds", "--instance", "nowhere"))
	golden(t, "why-ready", lockstep(t, ns, "why", "si/db"))
	golden(t, "why-namespace-ready", lockstep(t, "", "why", "namespace", ns))
}

// TestHistoryAndWhy: an instance whose broker refused an update and a
// delete; its history is the timeline of those operations, and why says
// that the delete was refused and how to delete it without the broker.
func TestHistoryAndWhy(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "plugin-history")
	r := lockstep(t, ns, "provision", "flaky", "--service", "failing", "--plan", "default", "-p", "refuse=deprovision")
	require.Equal(t, 0, r.code, r.text())
	var si v1alpha1.ServiceInstance
	require.NoError(t, env.admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "flaky"}, &si))
	patch := client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"parameters":{"refuse":"update"}}}`))
	require.Error(t, env.admin.Patch(ctx, &si, patch), "the broker refuses the update")
	require.Error(t, env.admin.Delete(ctx, &si), "the broker refuses the deprovision")
	// The records of both refusals are written after the replies.
	require.Eventually(t, func() bool {
		var ops v1alpha1.BrokerOperationList
		require.NoError(t, env.admin.List(ctx, &ops, client.InNamespace(ns)))
		failed := 0
		for _, op := range ops.Items {
			if op.Status.Phase == v1alpha1.PhaseFailed {
				failed++
			}
		}
		return failed == 2 && statusSays(t, ns, "flaky", v1alpha1.VerbDeprovision)
	}, 30*time.Second, 100*time.Millisecond)

	golden(t, "history", lockstep(t, ns, "history", "si/flaky"))
	golden(t, "history-none", lockstep(t, ns, "history", "sbd/nothing"))
	golden(t, "why-refused-delete", lockstep(t, ns, "why", "flaky"))
	golden(t, "why-unknown", lockstep(t, ns, "why", "si/nothing"))
}

// statusSays reports whether the instance's last operation is verb.
func statusSays(t *testing.T, ns, name string, verb v1alpha1.Verb) bool {
	t.Helper()
	var si v1alpha1.ServiceInstance
	require.NoError(t, env.admin.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &si))
	return si.Status.LastOperation != nil && si.Status.LastOperation.Verb == verb
}

// TestWhyNamespaceNamesTheWayOut: a namespace whose instance's broker
// refuses to deprovision it stays Terminating; why namespace says so and
// names the way out, detach --all takes it, and the namespace goes.
func TestWhyNamespaceNamesTheWayOut(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "plugin-stuck")
	r := lockstep(t, ns, "provision", "stuck", "--service", "failing", "--plan", "default", "-p", "refuse=deprovision")
	require.Equal(t, 0, r.code, r.text())
	r = lockstep(t, ns, "provision", "fine", "--service", "quick", "--plan", "small", "-p", "region=eu")
	require.Equal(t, 0, r.code, r.text())

	namespaceObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	require.NoError(t, env.admin.Delete(ctx, namespaceObj))
	// The namespace controller deletes "fine" (deprovisioned at the
	// broker) and reports that it cannot delete "stuck".
	require.Eventually(t, func() bool {
		require.NoError(t, env.admin.Get(ctx, client.ObjectKeyFromObject(namespaceObj), namespaceObj))
		failed := false
		for _, c := range namespaceObj.Status.Conditions {
			failed = failed || c.Type == corev1.NamespaceDeletionContentFailure && c.Status == corev1.ConditionTrue
		}
		var left v1alpha1.ServiceInstanceList
		require.NoError(t, env.admin.List(ctx, &left, client.InNamespace(ns)))
		return failed && len(left.Items) == 1 && statusSays(t, ns, "stuck", v1alpha1.VerbDeprovision)
	}, 90*time.Second, 200*time.Millisecond, "the namespace controller never reported the refused deprovision: %+v", namespaceObj.Status)

	golden(t, "why-namespace-stuck", lockstep(t, "", "why", "namespace", ns))
	golden(t, "why-deleting", lockstep(t, ns, "why", "si/stuck"))
	golden(t, "detach-all", lockstep(t, ns, "detach", "--all"))
	gone(t, namespaceObj)
}

// TestAdopt: an instance left at the broker by a detached delete is
// adopted again; an adoption whose spec differs from what the broker holds
// is refused with the broker's values, as lockstep answered.
func TestAdopt(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "plugin-adopt")
	r := lockstep(t, ns, "provision", "orig", "--service", "quick", "--plan", "small", "-p", "region=eu", "-p", "size=2")
	require.Equal(t, 0, r.code, r.text())
	var orig v1alpha1.ServiceInstance
	require.NoError(t, env.admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "orig"}, &orig))
	golden(t, "detach", lockstep(t, ns, "detach", "si/orig"))
	golden(t, "detach-again", lockstep(t, ns, "detach", "si/orig"))
	require.NoError(t, env.admin.Delete(ctx, &orig))
	gone(t, &orig)

	id := orig.Spec.ExternalID
	golden(t, "adopt-refused", lockstep(t, ns, "adopt", "instance", "copy", "--external-id", id,
		"--service", "quick", "--plan", "small", "-p", "region=eu", "-p", "size=5"))
	golden(t, "adopt", lockstep(t, ns, "adopt", "instance", "copy", "--external-id", id,
		"--service", "quick", "--plan", "small", "-p", "region=eu", "-p", "size=2"))
	golden(t, "adopt-history", lockstep(t, ns, "history", "si/copy"))
}

// TestCompletion: the shell completion of plans, plan names for a service,
// and the objects of a namespace, from the cluster; and the completion
// scripts themselves.
func TestCompletion(t *testing.T) {
	ns := namespace(t, "plugin-complete")
	r := lockstep(t, ns, "provision", "db", "--service", "quick", "--plan", "small", "-p", "region=eu")
	require.Equal(t, 0, r.code, r.text())
	golden(t, "complete-plans", lockstep(t, "", "__complete", "describe", "plan", "quick/"))
	golden(t, "complete-plan-flag", lockstep(t, "", "__complete", "provision", "x", "--service", "quick", "--plan", ""))
	golden(t, "complete-objects", lockstep(t, ns, "__complete", "why", ""))
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		r := lockstep(t, "", "completion", shell)
		assert.Equal(t, 0, r.code, r.text())
		assert.Contains(t, r.stdout, "kubectl-lockstep", shell)
	}
}
