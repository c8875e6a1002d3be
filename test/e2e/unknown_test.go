package e2e

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
)

// sides is what the broker and the API server hold for one namespace:
// instances by external id with their parameters, bindings by external id.
type sides struct {
	instances map[string]string // external id → parameters as JSON ("null" for none)
	bindings  []string
}

// brokerSide is what the test broker holds for the instances of namespace
// ns (their external ids start with ns).
func brokerSide(b *fakebroker.Broker, ns string) sides {
	s := sides{instances: map[string]string{}}
	for id, inst := range b.Instances() {
		if strings.HasPrefix(id, ns) {
			s.instances[id] = canonicalJSON(inst.Parameters)
		}
	}
	for _, bnd := range b.Bindings() {
		if strings.HasPrefix(bnd.InstanceID, ns) {
			s.bindings = append(s.bindings, bnd.ID)
		}
	}
	sort.Strings(s.bindings)
	return s
}

// clusterSide is what the API server holds in namespace ns.
func clusterSide(t *testing.T, ns string) sides {
	t.Helper()
	s := sides{instances: map[string]string{}}
	var instances v1alpha1.ServiceInstanceList
	require.NoError(t, cluster.client.List(context.Background(), &instances, client.InNamespace(ns)))
	for _, si := range instances.Items {
		var params map[string]any
		if si.Spec.Parameters != nil {
			require.NoError(t, json.Unmarshal(si.Spec.Parameters.Raw, &params))
		}
		s.instances[si.Spec.ExternalID] = canonicalJSON(params)
	}
	var bindings v1alpha1.ServiceBindingList
	require.NoError(t, cluster.client.List(context.Background(), &bindings, client.InNamespace(ns)))
	for _, b := range bindings.Items {
		s.bindings = append(s.bindings, b.Spec.ExternalID)
	}
	sort.Strings(s.bindings)
	return s
}

func canonicalJSON(m map[string]any) string {
	raw, _ := json.Marshal(m)
	return string(raw)
}

// requireSidesEqual waits until the broker holds what the API server holds
// in namespace ns, and no operation of ns is left unfinished.
func requireSidesEqual(t *testing.T, b *fakebroker.Broker, ns string) {
	t.Helper()
	require.Eventually(t, func() bool {
		var ops v1alpha1.BrokerOperationList
		require.NoError(t, cluster.client.List(context.Background(), &ops, client.InNamespace(ns)))
		for _, op := range ops.Items {
			switch op.Status.Phase {
			case v1alpha1.PhaseCommitted, v1alpha1.PhaseCompensated, v1alpha1.PhaseFailed:
			default:
				return false
			}
		}
		return assert.ObjectsAreEqual(brokerSide(b, ns), clusterSide(t, ns))
	}, 60*time.Second, 200*time.Millisecond, "broker %+v and cluster %+v never became equal", brokerSide(b, ns), clusterSide(t, ns))
}

// inSyncBecomes waits until the object's InSync condition has status.
func inSyncBecomes(t *testing.T, obj client.Object, conditions func() []metav1.Condition, status metav1.ConditionStatus) metav1.Condition {
	t.Helper()
	var got metav1.Condition
	if !assert.Eventually(t, func() bool {
		require.NoError(t, cluster.client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj))
		c := meta.FindStatusCondition(conditions(), v1alpha1.ConditionInSync)
		if c != nil {
			got = *c
		}
		return c != nil && c.Status == status
	}, 30*time.Second, 100*time.Millisecond) {
		t.Fatalf("InSync of %s never became %s (last: %+v)", obj.GetName(), status, got)
	}
	return got
}

// TestBrokerCutOffWhilePollingEndsWithBothSidesEqual: the broker accepts a
// change (202), then cannot be reached while lockstep polls last_operation.
// The user is told that the outcome is unknown; lockstep asks on, and once
// the broker answers again, the broker and the API server hold the same.
func TestBrokerCutOffWhilePollingEndsWithBothSidesEqual(t *testing.T) {
	cutOff := fakebroker.Respond{CloseConnection: true}
	async := fakebroker.Respond{Async: &fakebroker.Async{InProgressPolls: 1}}

	t.Run("provision: whatever the broker created is deprovisioned", func(t *testing.T) {
		b := freshBroker(t)
		ns := namespace(t)
		b.ScriptInstance(fakebroker.OpProvision, ns+"-db", async)
		b.Always(fakebroker.OpInstanceLastOperation, cutOff)
		r := kubectl(t, instanceWith(ns, "db", "small", ns+"-db", ""), "apply", "-f", "-")
		require.NotEqual(t, 0, r.ExitCode)
		assert.Contains(t, r.Stderr, `broker "acme" accepted the request to provision instance "db"`)
		assert.Contains(t, r.Stderr, "the outcome is unknown: the instance is not created")
		assert.Contains(t, r.Stderr, "if the broker created the instance, lockstep deprovisions it")
		assert.False(t, instanceExists(t, ns, "db"))
		operationPhase(t, ns, "db", v1alpha1.VerbProvision, v1alpha1.PhaseInProgress)

		b.Reset() // the broker answers again, and finishes the provision
		requireSidesEqual(t, b, ns)
		assert.Equal(t, 1, b.Count(fakebroker.OpDeprovision), "the instance the broker created was deprovisioned")
	})

	t.Run("update: the persisted spec is applied again", func(t *testing.T) {
		b := freshBroker(t)
		ns := namespace(t)
		r := kubectl(t, instanceWith(ns, "db", "small", ns+"-db", `{"storageGB": 1}`), "apply", "-f", "-")
		require.Equal(t, 0, r.ExitCode, r.Output())
		b.ScriptInstance(fakebroker.OpUpdate, ns+"-db", async)
		b.Always(fakebroker.OpInstanceLastOperation, cutOff)
		r = kubectl(t, "", "patch", "serviceinstance", "db", "-n", ns, "--type=merge", "-p", `{"spec":{"parameters":{"storageGB":2}}}`)
		require.NotEqual(t, 0, r.ExitCode)
		assert.Contains(t, r.Stderr, "the outcome is unknown: the instance keeps its spec for now")
		si := getInstance(t, ns, "db")
		assert.JSONEq(t, `{"storageGB": 1}`, string(si.Spec.Parameters.Raw), "the spec stays what the broker last accepted")
		c := inSyncBecomes(t, si, func() []metav1.Condition { return si.Status.Conditions }, metav1.ConditionUnknown)
		assert.Equal(t, "OutcomeUnknown", c.Reason)

		b.Reset() // the broker answers again: it did carry the update out
		requireSidesEqual(t, b, ns)
		inSyncBecomes(t, si, func() []metav1.Condition { return si.Status.Conditions }, metav1.ConditionTrue)
	})

	t.Run("deprovision: the delete is finished once the broker confirms", func(t *testing.T) {
		b := freshBroker(t)
		ns := namespace(t)
		r := kubectl(t, instanceWith(ns, "db", "small", ns+"-db", ""), "apply", "-f", "-")
		require.Equal(t, 0, r.ExitCode, r.Output())
		b.ScriptInstance(fakebroker.OpDeprovision, ns+"-db", async)
		b.Always(fakebroker.OpInstanceLastOperation, cutOff)
		r = kubectl(t, "", "delete", "serviceinstance", "db", "-n", ns, "--wait=false")
		require.NotEqual(t, 0, r.ExitCode)
		assert.Contains(t, r.Stderr, "the outcome is unknown: the instance is not deleted for now")
		assert.Contains(t, r.Stderr, "if the broker deprovisioned it, lockstep deletes the instance")
		si := getInstance(t, ns, "db")
		assert.Nil(t, si.DeletionTimestamp)
		inSyncBecomes(t, si, func() []metav1.Condition { return si.Status.Conditions }, metav1.ConditionUnknown)

		b.Reset()
		requireSidesEqual(t, b, ns)
		assert.False(t, instanceExists(t, ns, "db"))
	})

	t.Run("bind: whatever the broker bound is unbound", func(t *testing.T) {
		b, ns := boundInstance(t)
		b.ScriptInstance(fakebroker.OpBind, ns+"-db", async)
		b.Always(fakebroker.OpBindingLastOperation, cutOff)
		r := kubectl(t, bindingYAML(ns, "creds", "db", ns+"-creds", ""), "apply", "-f", "-")
		require.NotEqual(t, 0, r.ExitCode)
		assert.Contains(t, r.Stderr, "the outcome is unknown: the binding is not created")
		assert.Contains(t, r.Stderr, "if the broker created the binding, lockstep unbinds it")
		assert.False(t, bindingExists(t, ns, "creds"))

		b.Reset()
		requireSidesEqual(t, b, ns)
		_, ok := getSecret(t, ns, "creds")
		assert.False(t, ok, "no credentials are left behind")
	})

	t.Run("unbind: the delete is finished once the broker confirms", func(t *testing.T) {
		b, ns := boundInstance(t)
		r := kubectl(t, bindingYAML(ns, "creds", "db", ns+"-creds", ""), "apply", "-f", "-")
		require.Equal(t, 0, r.ExitCode, r.Output())
		b.ScriptInstance(fakebroker.OpUnbind, ns+"-db", async)
		b.Always(fakebroker.OpBindingLastOperation, cutOff)
		r = kubectl(t, "", "delete", "servicebinding", "creds", "-n", ns, "--wait=false")
		require.NotEqual(t, 0, r.ExitCode)
		assert.Contains(t, r.Stderr, "the outcome is unknown")
		assert.True(t, bindingExists(t, ns, "creds"))

		b.Reset()
		requireSidesEqual(t, b, ns)
		assert.False(t, bindingExists(t, ns, "creds"))
	})
}

// TestAnAdmittedDeleteCallsTheBrokerOnce: the finalizer never repeats a
// deprovision or unbind that admission carried out.
func TestAnAdmittedDeleteCallsTheBrokerOnce(t *testing.T) {
	b, ns := boundInstance(t)
	r := kubectl(t, bindingYAML(ns, "creds", "db", ns+"-creds", ""), "apply", "-f", "-")
	require.Equal(t, 0, r.ExitCode, r.Output())

	r = kubectl(t, "", "delete", "servicebinding", "creds", "-n", ns)
	require.Equal(t, 0, r.ExitCode, r.Output())
	r = kubectl(t, "", "delete", "serviceinstance", "db", "-n", ns)
	require.Equal(t, 0, r.ExitCode, r.Output())
	require.Eventually(t, func() bool { return !instanceExists(t, ns, "db") && !bindingExists(t, ns, "creds") },
		10*time.Second, 50*time.Millisecond, "the finalizers let the objects go")
	requireSidesEqual(t, b, ns)

	assert.Equal(t, 1, b.Count(fakebroker.OpUnbind), "one DELETE of the binding at the broker")
	assert.Equal(t, 1, b.Count(fakebroker.OpDeprovision), "one DELETE of the instance at the broker")
}
