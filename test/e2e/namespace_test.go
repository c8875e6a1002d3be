package e2e

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/journal"
)

// lockstepNamespace is lockstep's own namespace in these tests
// (startWebhook's configuration).
const lockstepNamespace = "lockstep-system"

// TestDeletingANamespaceDeprovisionsEverythingInIt: `kubectl delete
// namespace` on a namespace with instances and bindings, the broker
// healthy. The namespace controller deletes its objects; each delete goes
// through lockstep to the broker like any other. The namespace is gone
// within the bound, every binding was unbound and every instance
// deprovisioned at the broker (once each), nothing of the namespace is
// left, the records of those deletes are in lockstep's namespace, each in
// a final phase, and no lock of its objects is held.
func TestDeletingANamespaceDeprovisionsEverythingInIt(t *testing.T) {
	b := freshBroker(t)
	ns := namespace(t)
	bindings := map[string]string{"db-creds": "db", "db-admin": "db", "cache-creds": "cache"} // binding → instance
	for _, name := range []string{"db", "cache", "queue"} {
		r := kubectl(t, instanceWith(ns, name, "small", ns+"-"+name, ""), "apply", "-f", "-")
		require.Equal(t, 0, r.ExitCode, r.Output())
	}
	for name, instance := range bindings {
		r := kubectl(t, bindingYAML(ns, name, instance, ns+"-"+name, ""), "apply", "-f", "-")
		require.Equal(t, 0, r.ExitCode, r.Output())
		_, ok := getSecret(t, ns, name)
		require.True(t, ok, "binding %s has its Secret", name)
	}
	atBroker := brokerSide(b, ns)
	require.Len(t, atBroker.instances, 3, "the broker holds the instances")
	require.Len(t, atBroker.bindings, 3, "the broker holds the bindings")
	b.ResetCalls()

	const bound = 45 * time.Second
	started := time.Now()
	r := kubectl(t, "", "delete", "namespace", ns, "--timeout="+bound.String())
	took := time.Since(started)
	require.Equal(t, 0, r.ExitCode, "the namespace must be gone within %s:\n%s\n%s", bound, r.Output(), kubectl(t, "", "get", "namespace", ns, "-o", "yaml").Output())
	assert.Equal(t, `namespace "`+ns+`" deleted`+"\n", r.Stdout)
	t.Logf("the namespace was deleted in %s", took.Round(10*time.Millisecond))
	r = kubectl(t, "", "get", "namespace", ns)
	assert.Contains(t, r.Stderr, `namespaces "`+ns+`" not found`)

	// The broker let everything go, each with one DELETE.
	assert.Empty(t, brokerSide(b, ns).instances, "every instance is deprovisioned")
	assert.Empty(t, brokerSide(b, ns).bindings, "every binding is unbound")
	assert.Equal(t, 3, b.Count(fakebroker.OpDeprovision), "one DELETE per instance")
	assert.Equal(t, 3, b.Count(fakebroker.OpUnbind), "one DELETE per binding")

	// Nothing of the namespace is left.
	ctx := context.Background()
	for _, list := range []client.ObjectList{&v1alpha1.ServiceInstanceList{}, &v1alpha1.ServiceBindingList{}, &v1alpha1.BrokerOperationList{}, &corev1.SecretList{}} {
		require.NoError(t, cluster.client.List(ctx, list, client.InNamespace(ns)))
		items, err := meta.ExtractList(list)
		require.NoError(t, err)
		assert.Empty(t, items, "%T in the deleted namespace", list)
	}

	// The records of the deletes are in lockstep's namespace, final.
	var verbs []string
	require.Eventually(t, func() bool {
		verbs = nil
		var ops v1alpha1.BrokerOperationList
		require.NoError(t, cluster.client.List(ctx, &ops, client.InNamespace(lockstepNamespace)))
		for _, op := range ops.Items {
			if op.Spec.Target.Namespace != ns {
				continue
			}
			switch op.Status.Phase {
			case v1alpha1.PhaseCommitted:
				verbs = append(verbs, string(op.Spec.Verb)+" "+op.Spec.Target.Name)
			case v1alpha1.PhaseFailed, v1alpha1.PhaseCompensated:
			default:
				return false
			}
		}
		sort.Strings(verbs)
		return len(verbs) == 6
	}, 30*time.Second, 100*time.Millisecond, "the delete records in %s never became final: committed %v", lockstepNamespace, verbs)
	assert.Equal(t, []string{
		"deprovision cache", "deprovision db", "deprovision queue",
		"unbind cache-creds", "unbind db-admin", "unbind db-creds",
	}, verbs)

	// Every lock of the namespace's objects is released.
	var held []string
	require.Eventually(t, func() bool {
		held = nil
		var leases coordinationv1.LeaseList
		require.NoError(t, cluster.client.List(ctx, &leases, client.InNamespace(lockstepNamespace)))
		for _, l := range leases.Items {
			if l.Annotations[journal.AnnotationNamespace] == ns {
				held = append(held, l.Name)
			}
		}
		return len(held) == 0
	}, 30*time.Second, 100*time.Millisecond, "locks of the deleted namespace's objects are still held: %v", held)
}
