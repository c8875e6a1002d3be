package check

import (
	"testing"

	"github.com/stretchr/testify/assert"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

func TestFinal(t *testing.T) {
	record := func(name string, phase v1alpha1.OperationPhase) v1alpha1.BrokerOperation {
		return v1alpha1.BrokerOperation{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
			Spec:   v1alpha1.BrokerOperationSpec{Target: v1alpha1.OperationTarget{Kind: v1alpha1.KindServiceInstance, Name: "db"}, Verb: v1alpha1.VerbUpdate},
			Status: v1alpha1.BrokerOperationStatus{Phase: phase}}
	}
	gone := instance("gone", "id-2", "small", ``, nil)
	deleting(&gone.ObjectMeta)
	refusing := instance("refusing", "id-3", "small", ``, []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse,
		Message: "broker refuses; set the annotation lockstep.dev/reconcile-policy=detach-on-delete to delete it without the broker"}})
	refusing.Namespace = "held"
	deleting(&refusing.ObjectMeta)
	stuckNS, heldNS := corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}}, corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "held"}}
	deleting(&stuckNS.ObjectMeta)
	deleting(&heldNS.ObjectMeta)

	got := Final(Snapshot{
		Records: []v1alpha1.BrokerOperation{record("a", v1alpha1.PhaseCommitted), record("b", v1alpha1.PhaseInProgress), record("c", ""),
			record("d", v1alpha1.PhaseFailed), record("e", v1alpha1.PhaseCompensated)},
		Locks:      []coordinationv1.Lease{{ObjectMeta: metav1.ObjectMeta{Namespace: "lockstep-system", Name: "lock-db"}, Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("op-b")}}},
		Instances:  []v1alpha1.ServiceInstance{instance("db", "id-1", "small", ``, nil), gone, refusing},
		Namespaces: []corev1.Namespace{stuckNS, heldNS, {ObjectMeta: metav1.ObjectMeta{Name: "fine"}}},
	})
	var messages []string
	for _, v := range got {
		messages = append(messages, string(v.Invariant)+": "+v.Object+": "+v.Message)
	}
	assert.Equal(t, []string{
		"every operation final: ServiceInstance ns/db: operation ns/b (update by ) is still InProgress: ",
		"every operation final: ServiceInstance ns/db: operation ns/c (update by ) is still Pending: ",
		`every lock released: Lease lockstep-system/lock-db: the lock is still held by "op-b"`,
		"nothing stuck deleting: ServiceInstance ns/gone: still being deleted (since 12:00:00), and nothing on it names the way out",
		"nothing stuck deleting: Namespace ns: still Terminating (since 12:00:00), and no object in it names the way out",
	}, messages)
}

// TestStrandedObjectsAreLeftOut: what is left in a namespace that no
// longer exists is listed, not checked for what lockstep must finish, and
// still claims its broker ids.
func TestStrandedObjectsAreLeftOut(t *testing.T) {
	gone := instance("db", "id-1", "small", ``, nil)
	gone.Namespace = "gone"
	deleting(&gone.ObjectMeta)
	rec := v1alpha1.BrokerOperation{ObjectMeta: metav1.ObjectMeta{Namespace: "gone", Name: "op"}}
	lock := coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "lockstep-system", Name: "lock",
		Annotations: map[string]string{"lockstep.dev/namespace": "gone"}}}
	b := broker()
	b.Instances["id-1"] = Instance{PlanID: "small-id"}
	s := Snapshot{Instances: []v1alpha1.ServiceInstance{gone}, Records: []v1alpha1.BrokerOperation{rec}, Locks: []coordinationv1.Lease{lock},
		Live: map[string]bool{"lockstep-system": true}, Brokers: map[string]*Broker{"fake": b}}
	assert.Empty(t, Final(s))
	assert.Empty(t, BrokerState(s))
	assert.Empty(t, Leaks(s), "the stranded instance still claims its id")
	assert.Equal(t, []string{"ServiceInstance gone/db", "BrokerOperation gone/op", "the lock lock"}, Stranded(s))
}
