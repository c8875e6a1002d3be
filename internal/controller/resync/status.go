package resync

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SetCondition sets one condition of conds. Its transition time moves only
// when its status does, and its observed generation stays what admission
// and the journal set (resync observes the broker, not a new generation),
// so that an unchanged result changes nothing.
func SetCondition(conds *[]metav1.Condition, kind string, status metav1.ConditionStatus, reason, msg string) {
	var generation int64
	if c := meta.FindStatusCondition(*conds, kind); c != nil {
		generation = c.ObservedGeneration
	}
	meta.SetStatusCondition(conds, metav1.Condition{Type: kind, Status: status, Reason: reason, Message: msg, ObservedGeneration: generation})
}
