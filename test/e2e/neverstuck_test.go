package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/journal"
)

// stuckObjects are the instances and bindings every namespace of these
// tests holds: binding → instance.
var stuckObjects = map[string]string{"db-creds": "db", "cache-creds": "cache"}

// createAt creates, in namespace ns, instances db and cache at the
// ServiceBroker called brokerName and a binding of each, and waits until
// every binding has its Secret.
func createAt(t *testing.T, ns, brokerName string) {
	t.Helper()
	for _, name := range []string{"db", "cache"} {
		r := kubectl(t, fmt.Sprintf(`apiVersion: lockstep.dev/v1alpha1
kind: ServiceInstance
metadata: {name: %s, namespace: %s}
spec: {brokerName: %s, serviceName: db, planName: small, externalID: %s-%s}
`, name, ns, brokerName, ns, name), "apply", "-f", "-")
		require.Equal(t, 0, r.ExitCode, r.Output())
	}
	for name, instance := range stuckObjects {
		r := kubectl(t, bindingYAML(ns, name, instance, ns+"-"+name, ""), "apply", "-f", "-")
		require.Equal(t, 0, r.ExitCode, r.Output())
		_, ok := getSecret(t, ns, name)
		require.True(t, ok, "binding %s has its Secret", name)
	}
}

// startBroker starts a test broker and registers it as ServiceBroker name;
// the ServiceBroker is deleted when the test ends.
func startBroker(t *testing.T, name string) *fakebroker.Broker {
	t.Helper()
	b, err := fakebroker.Start()
	require.NoError(t, err)
	t.Cleanup(b.Close)
	require.NoError(t, registerBroker(name, b.URL()))
	t.Cleanup(func() {
		_ = cluster.client.Delete(context.Background(), &v1alpha1.ServiceBroker{ObjectMeta: metav1.ObjectMeta{Name: name}})
	})
	return b
}

// contentFailure waits until the namespace controller reports that it
// could not delete everything in namespace ns, and returns the namespace
// as `kubectl get namespace -o yaml` shows it.
func contentFailure(t *testing.T, ns string) (corev1.Namespace, string) {
	t.Helper()
	var seen corev1.Namespace
	require.Eventually(t, func() bool {
		require.NoError(t, cluster.client.Get(context.Background(), client.ObjectKey{Name: ns}, &seen))
		for _, c := range seen.Status.Conditions {
			if c.Type == corev1.NamespaceDeletionContentFailure && c.Status == corev1.ConditionTrue {
				return true
			}
		}
		return false
	}, 60*time.Second, 200*time.Millisecond, "the namespace controller never reported why %s is not deleted: %+v", ns, seen.Status)
	r := kubectl(t, "", "get", "namespace", ns, "-o", "yaml")
	require.Equal(t, 0, r.ExitCode, r.Output())
	var shown corev1.Namespace
	require.NoError(t, yaml.Unmarshal([]byte(r.Stdout), &shown))
	return shown, r.Stdout
}

// poll calls cond every interval until it holds or timeout has passed,
// in the test's own goroutine, so that what cond saw last can be reported.
func poll(timeout, interval time.Duration, cond func() bool) bool {
	err := wait.PollUntilContextTimeout(context.Background(), interval, timeout, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	return err == nil
}

// conditionMessage is the message of condition kind of a namespace.
func conditionMessage(ns corev1.Namespace, kind corev1.NamespaceConditionType) string {
	for _, c := range ns.Status.Conditions {
		if c.Type == kind {
			return c.Message
		}
	}
	return ""
}

// TestNamespacesWithTheirBrokerDownOrGoneAreNeverStuck: namespace A holds
// instances and bindings at a broker that is down (connection refused),
// namespace B at a ServiceBroker that no longer exists. `kubectl delete
// namespace A B` cannot deprovision or unbind anything: both stay
// Terminating, and `kubectl get namespace -o yaml` shows why in the
// namespace's conditions, with the command that lets go. Once every
// instance and binding is annotated detach-on-delete, as that command
// says, both namespaces are gone within the bound, with nothing left: no
// object, no Secret, no record that is not final, no lock; and both
// brokers keep what they hold.
func TestNamespacesWithTheirBrokerDownOrGoneAreNeverStuck(t *testing.T) {
	ctx := context.Background()
	nsA, nsB := namespace(t), namespace(t)
	downName, goneName := "down-"+nsA, "gone-"+nsB

	down := startBroker(t, downName)
	createAt(t, nsA, downName)
	down.Close() // connection refused from now on
	down.ResetCalls()

	gone := startBroker(t, goneName)
	createAt(t, nsB, goneName)
	// lockstep refuses to delete a ServiceBroker it manages objects at, so
	// a ServiceBroker can only be gone under managed objects when it was
	// deleted while that guard was not installed (before lockstep was, or
	// with its validating configuration edited): the test does the same.
	deleteServiceBrokerPastTheGuard(t, goneName)
	gone.ResetCalls()
	// lockstep's cache has seen the ServiceBroker go once a delete is
	// refused for it.
	var r result
	require.Eventually(t, func() bool {
		r = kubectl(t, "", "delete", "servicebinding", "db-creds", "-n", nsB, "--dry-run=server")
		return r.ExitCode != 0 && strings.Contains(r.Stderr, `which no longer exists`)
	}, 20*time.Second, 200*time.Millisecond, "last answer: %s", r.Output())

	r = kubectl(t, "", "delete", "namespace", nsA, nsB, "--wait=false")
	require.Equal(t, 0, r.ExitCode, r.Output())

	// Both stay Terminating; their conditions say why and what to do.
	for _, tt := range []struct {
		ns     string
		reason []string
	}{
		{nsA, []string{`broker could not be reached`, `connection refused`}},
		{nsB, []string{`uses ServiceBroker "` + goneName + `", which no longer exists`}},
	} {
		shown, out := contentFailure(t, tt.ns)
		assert.Equal(t, corev1.NamespaceTerminating, shown.Status.Phase, out)
		msg := conditionMessage(shown, corev1.NamespaceDeletionContentFailure)
		assert.Contains(t, msg, `admission webhook "servicebindings.validate.lockstep.dev" denied the request`)
		for _, want := range tt.reason {
			assert.Contains(t, msg, want)
		}
		assert.Contains(t, msg, "no deletion was started")
		assert.Regexp(t, `kubectl annotate servicebinding (db|cache)-creds -n `+tt.ns+` lockstep.dev/reconcile-policy=detach-on-delete, then delete again`, msg)
		r = kubectl(t, "", "get", "namespace", tt.ns)
		assert.Contains(t, r.Stdout, "Terminating")
	}
	// In A the refused unbind is also on the binding: its last operation
	// says why, and Ready says its credentials are gone (the namespace
	// controller deletes Secrets, which lockstep does not guard).
	var refused *v1alpha1.ServiceBinding
	require.True(t, poll(20*time.Second, 100*time.Millisecond, func() bool {
		var bindings v1alpha1.ServiceBindingList
		require.NoError(t, cluster.client.List(ctx, &bindings, client.InNamespace(nsA)))
		for i, b := range bindings.Items {
			last, ready := b.Status.LastOperation, meta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionReady)
			if last != nil && last.Verb == v1alpha1.VerbUnbind && last.State == v1alpha1.StateFailed && ready != nil && ready.Reason == "CredentialsMissing" {
				refused = &bindings.Items[i]
				return true
			}
		}
		return false
	}), "no binding in %s reports its refused unbind and its missing credentials", nsA)
	r = kubectl(t, "", "get", "servicebinding", refused.Name, "-n", nsA, "-o",
		`jsonpath={.status.lastOperation.verb} {.status.lastOperation.state}: {.status.lastOperation.description}{"\n"}{.status.conditions[?(@.type=="Ready")].reason}`)
	assert.Contains(t, r.Stdout, "unbind failed: could not unbind binding \""+refused.Name+"\"")
	assert.Contains(t, r.Stdout, "connection refused")
	assert.Contains(t, r.Stdout, "\nCredentialsMissing")

	// Nothing was deleted yet: everything stays as it was.
	for _, ns := range []string{nsA, nsB} {
		for binding, instance := range stuckObjects {
			assert.True(t, bindingExists(t, ns, binding))
			assert.True(t, instanceExists(t, ns, instance))
		}
	}

	// The way out, as the README and the refusal say it.
	for _, ns := range []string{nsA, nsB} {
		r = kubectl(t, "", "annotate", "serviceinstances,servicebindings", "--all", "-n", ns, "lockstep.dev/reconcile-policy=detach-on-delete")
		require.Equal(t, 0, r.ExitCode, r.Output())
	}
	const bound = 60 * time.Second
	started := time.Now()
	r = kubectl(t, "", "wait", "--for=delete", "namespace/"+nsA, "namespace/"+nsB, "--timeout="+bound.String())
	took := time.Since(started)
	if r.ExitCode != 0 {
		t.Fatalf("both namespaces must be gone within %s:\n%s\n%s", bound, r.Output(), kubectl(t, "", "get", "namespace", nsA, nsB, "-o", "yaml").Output())
	}
	t.Logf("both namespaces were gone %s after the annotations", took.Round(10*time.Millisecond))

	// Nothing of them is left.
	for _, ns := range []string{nsA, nsB} {
		var got corev1.Namespace
		assert.True(t, apierrors.IsNotFound(cluster.client.Get(ctx, client.ObjectKey{Name: ns}, &got)), "namespace %s is gone", ns)
		for _, list := range []client.ObjectList{&v1alpha1.ServiceInstanceList{}, &v1alpha1.ServiceBindingList{}, &v1alpha1.BrokerOperationList{}, &corev1.SecretList{}} {
			require.NoError(t, cluster.client.List(ctx, list, client.InNamespace(ns)))
			items, err := meta.ExtractList(list)
			require.NoError(t, err)
			assert.Empty(t, items, "%T in the deleted namespace %s", list, ns)
		}
	}

	// The records of the deletes are in lockstep's namespace, every one
	// final: one committed detach per object; in A also the failed
	// attempts at the broker that was down.
	want := map[string][]string{}
	for _, ns := range []string{nsA, nsB} {
		for binding, instance := range stuckObjects {
			want[ns] = append(want[ns], "detach "+binding, "detach "+instance)
		}
		sort.Strings(want[ns])
	}
	var (
		committed, failed, open map[string][]string
		all                     []string
	)
	settled := func() bool {
		committed, failed, open, all = map[string][]string{}, map[string][]string{}, map[string][]string{}, nil
		var ops v1alpha1.BrokerOperationList
		require.NoError(t, cluster.client.List(ctx, &ops, client.InNamespace(lockstepNamespace)))
		for _, op := range ops.Items {
			all = append(all, fmt.Sprintf("%s %s/%s %s", op.Name, op.Spec.Target.Namespace, op.Spec.Target.Name, op.Status.Phase))
			ns := op.Spec.Target.Namespace
			if ns != nsA && ns != nsB {
				continue
			}
			entry := string(op.Spec.Verb) + " " + op.Spec.Target.Name
			switch op.Status.Phase {
			case v1alpha1.PhaseCommitted:
				committed[ns] = append(committed[ns], entry)
			case v1alpha1.PhaseFailed, v1alpha1.PhaseCompensated:
				failed[ns] = append(failed[ns], entry)
			default:
				open[ns] = append(open[ns], entry+" ("+string(op.Status.Phase)+")")
			}
		}
		sort.Strings(committed[nsA])
		sort.Strings(committed[nsB])
		return len(open) == 0 && assert.ObjectsAreEqual(want, committed)
	}
	if !poll(30*time.Second, 100*time.Millisecond, settled) {
		t.Fatalf("the records in %s never became final: committed %v, failed %v, not final %v; all: %v", lockstepNamespace, committed, failed, open, all)
	}
	for _, entry := range failed[nsA] {
		assert.Regexp(t, `^(unbind|deprovision) `, entry, "a failed attempt in A is a refused unbind or deprovision")
	}
	assert.Empty(t, failed[nsB], "in B no attempt reached the journal: there was no broker to ask")

	// Every lock of their objects is released.
	var held []string
	require.Eventually(t, func() bool {
		held = nil
		var leases coordinationv1.LeaseList
		require.NoError(t, cluster.client.List(ctx, &leases, client.InNamespace(lockstepNamespace)))
		for _, l := range leases.Items {
			if ns := l.Annotations[journal.AnnotationNamespace]; ns == nsA || ns == nsB {
				held = append(held, l.Name)
			}
		}
		return len(held) == 0
	}, 30*time.Second, 100*time.Millisecond, "locks of the deleted namespaces' objects are still held: %v", held)

	// Both brokers keep what they held; neither was asked to let go.
	for _, tt := range []struct {
		ns string
		b  *fakebroker.Broker
	}{{nsA, down}, {nsB, gone}} {
		held := brokerSide(tt.b, tt.ns)
		assert.Len(t, held.instances, 2, "broker of %s keeps its instances", tt.ns)
		assert.Len(t, held.bindings, 2, "broker of %s keeps its bindings", tt.ns)
		assert.Zero(t, tt.b.Count(fakebroker.OpDeprovision, fakebroker.OpUnbind), "broker of %s was asked to let go", tt.ns)
	}
}

// TestServiceBrokerInUseIsDeletedOnlyOnceEveryObjectLetsGo: a ServiceBroker
// that lockstep manages instances and bindings at cannot be deleted; the
// refusal counts them and names the first few. Each object annotated
// detach-on-delete or observe stops holding it; once every one is, the
// ServiceBroker can be deleted, and the objects, now without a
// ServiceBroker, can still be deleted (the broker keeps what they hold).
func TestServiceBrokerInUseIsDeletedOnlyOnceEveryObjectLetsGo(t *testing.T) {
	ns := namespace(t)
	name := "inuse-" + ns
	b := startBroker(t, name)
	instances := []string{"a", "b", "c", "d", "e", "f"}
	for _, instance := range instances {
		r := kubectl(t, fmt.Sprintf(`apiVersion: lockstep.dev/v1alpha1
kind: ServiceInstance
metadata: {name: %s, namespace: %s}
spec: {brokerName: %s, serviceName: db, planName: small, externalID: %s-%s}
`, instance, ns, name, ns, instance), "apply", "-f", "-")
		require.Equal(t, 0, r.ExitCode, r.Output())
	}
	for _, instance := range []string{"a", "b"} {
		r := kubectl(t, bindingYAML(ns, instance+"-creds", instance, ns+"-"+instance+"-creds", ""), "apply", "-f", "-")
		require.Equal(t, 0, r.ExitCode, r.Output())
	}

	r := kubectl(t, "", "delete", "servicebroker", name, "--wait=false")
	require.NotEqual(t, 0, r.ExitCode)
	assert.Contains(t, r.Stderr, `admission webhook "servicebrokers.validate.lockstep.dev" denied the request: `+
		`ServiceBroker "`+name+`" cannot be deleted: lockstep manages 8 object(s) at it (`+
		`servicebinding `+ns+`/a-creds, servicebinding `+ns+`/b-creds, serviceinstance `+ns+`/a, serviceinstance `+ns+`/b, serviceinstance `+ns+`/c and 3 more)`)
	assert.Contains(t, r.Stderr, "kubectl annotate <kind> <name> -n <namespace> lockstep.dev/reconcile-policy=detach-on-delete; the ServiceBroker stays")

	// Everything but instance f lets go: the bindings and a-c keep the
	// broker's resources on delete, d and e are observed.
	r = kubectl(t, "", "annotate", "servicebindings", "--all", "-n", ns, "lockstep.dev/reconcile-policy=detach-on-delete")
	require.Equal(t, 0, r.ExitCode, r.Output())
	r = kubectl(t, "", "annotate", "serviceinstances", "a", "b", "c", "-n", ns, "lockstep.dev/reconcile-policy=detach-on-delete")
	require.Equal(t, 0, r.ExitCode, r.Output())
	r = kubectl(t, "", "annotate", "serviceinstances", "d", "e", "-n", ns, "lockstep.dev/reconcile-policy=observe")
	require.Equal(t, 0, r.ExitCode, r.Output())
	want := `ServiceBroker "` + name + `" cannot be deleted: lockstep manages 1 object(s) at it (serviceinstance ` + ns + `/f)`
	// The guard reads lockstep's cache, which sees the annotations a
	// moment after the API server stored them.
	require.True(t, poll(10*time.Second, 100*time.Millisecond, func() bool {
		r = kubectl(t, "", "delete", "servicebroker", name, "--wait=false")
		return r.ExitCode != 0 && strings.Contains(r.Stderr, want)
	}), "last answer: %s", r.Output())

	r = kubectl(t, "", "annotate", "serviceinstance", "f", "-n", ns, "lockstep.dev/reconcile-policy=observe")
	require.Equal(t, 0, r.ExitCode, r.Output())
	r = retried(t, "", "delete", "servicebroker", name, "--timeout=20s")
	assert.Equal(t, `servicebroker.lockstep.dev "`+name+`" deleted`+"\n", r.Stdout)
	require.True(t, poll(20*time.Second, 100*time.Millisecond, func() bool {
		return apierrors.IsNotFound(cluster.client.Get(context.Background(), client.ObjectKey{Name: name}, &v1alpha1.ServiceBroker{}))
	}), "the ServiceBroker is gone")

	// Nothing is stuck without it: the namespace goes, the broker keeps
	// what it holds and was never asked to let go.
	b.ResetCalls()
	const bound = 60 * time.Second
	r = kubectl(t, "", "delete", "namespace", ns, "--timeout="+bound.String())
	require.Equal(t, 0, r.ExitCode, "the namespace must be gone within %s:\n%s", bound, r.Output())
	held := brokerSide(b, ns)
	assert.Len(t, held.instances, len(instances), "the broker keeps its instances")
	assert.Len(t, held.bindings, 2, "the broker keeps its bindings")
	assert.Zero(t, b.Count(fakebroker.OpDeprovision, fakebroker.OpUnbind))
}
