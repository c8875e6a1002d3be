package resync

import (
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// setInSync sets the InSync condition of an instance's status.
func setInSync(s *v1alpha1.ServiceInstanceStatus, status metav1.ConditionStatus, reason, msg string) {
	setCondition(s, v1alpha1.ConditionInSync, status, reason, msg)
}

// setCondition sets one condition; its transition time moves only when
// its status does, so that an unchanged result writes nothing.
func setCondition(s *v1alpha1.ServiceInstanceStatus, kind string, status metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: kind, Status: status, Reason: reason, Message: msg,
		ObservedGeneration: observed(s.Conditions, kind)})
}

// observed keeps a condition's observed generation: resync does not
// observe a new generation, admission and the operations reconciler do.
func observed(conds []metav1.Condition, kind string) int64 {
	if c := meta.FindStatusCondition(conds, kind); c != nil {
		return c.ObservedGeneration
	}
	return 0
}

// equalStatus reports whether two statuses say the same, transition times
// aside (SetStatusCondition keeps a time when nothing else changed).
func equalStatus(a, b *v1alpha1.ServiceInstanceStatus) bool {
	return equality.Semantic.DeepEqual(a, b)
}

// equalConditions reports whether two condition lists say the same.
func equalConditions(a, b []metav1.Condition) bool {
	return equality.Semantic.DeepEqual(a, b)
}
