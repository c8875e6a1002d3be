package journal

import (
	"slices"
	"strconv"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// Answered returns, of one object's records, the one that reached its
// answer last among those the object's status reports (Committed or
// Failed); nil when there is none.
func Answered(records []v1alpha1.BrokerOperation) *v1alpha1.BrokerOperation {
	var last *v1alpha1.BrokerOperation
	for i := range records {
		op := &records[i]
		if op.Status.Phase != v1alpha1.PhaseCommitted && op.Status.Phase != v1alpha1.PhaseFailed {
			continue
		}
		if last == nil || later(op, last) {
			last = op
		}
	}
	return last
}

// LastCommitted returns, of one object's records, the Committed one of
// the verbs given that was answered last; nil when there is none.
func LastCommitted(records []v1alpha1.BrokerOperation, verbs ...v1alpha1.Verb) *v1alpha1.BrokerOperation {
	var last *v1alpha1.BrokerOperation
	for i := range records {
		op := &records[i]
		if op.Status.Phase != v1alpha1.PhaseCommitted || !slices.Contains(verbs, op.Spec.Verb) {
			continue
		}
		if last == nil || later(op, last) {
			last = op
		}
	}
	return last
}

// later orders two answered records: by completion time, which the API
// server keeps to the second, then by the version the API server last
// wrote them at (a record is last written when it is answered), then by
// name.
func later(a, b *v1alpha1.BrokerOperation) bool {
	ta, tb := completion(a), completion(b)
	if !ta.Equal(&tb) {
		return tb.Before(&ta)
	}
	va, errA := strconv.ParseUint(a.ResourceVersion, 10, 64)
	vb, errB := strconv.ParseUint(b.ResourceVersion, 10, 64)
	if errA == nil && errB == nil && va != vb {
		return va > vb
	}
	return a.Name > b.Name
}

func completion(op *v1alpha1.BrokerOperation) metav1.Time {
	if op.Status.CompletionTime != nil {
		return *op.Status.CompletionTime
	}
	return op.CreationTimestamp
}

// LastOperation is how an object's status reports an answered record.
func LastOperation(op *v1alpha1.BrokerOperation) *v1alpha1.LastOperation {
	state := v1alpha1.StateSucceeded
	if op.Status.Phase == v1alpha1.PhaseFailed {
		state = v1alpha1.StateFailed
	}
	return &v1alpha1.LastOperation{
		Verb: op.Spec.Verb, State: state, Description: op.Status.Description, OperationName: op.Name,
		User: op.Spec.Requester.Username, StartTime: op.Status.StartTime, EndTime: op.Status.CompletionTime,
	}
}

// ApplyNotes sets the InSync condition in conds from what an object's
// records say beyond their phase (BrokerOperationStatus.TargetInSync):
//   - the answered record's note, when the status reports that answer for
//     the first time (answeredIsNew);
//   - the note of a record still under way (an outcome the broker could
//     not tell yet, a compensation going on), on every pass: the lock
//     keeps such a record alone;
//   - the note of a compensated record, unless InSync changed since it
//     was compensated (what resync found later stays).
func ApplyNotes(conds *[]metav1.Condition, answered *v1alpha1.BrokerOperation, answeredIsNew bool, records []v1alpha1.BrokerOperation) {
	if answered != nil && answeredIsNew {
		setNote(conds, answered)
	}
	for i := range records {
		op := &records[i]
		switch op.Status.Phase {
		case "", v1alpha1.PhasePending, v1alpha1.PhaseInProgress, v1alpha1.PhaseOrphaned:
			setNote(conds, op)
		case v1alpha1.PhaseCompensated:
			current := meta.FindStatusCondition(*conds, v1alpha1.ConditionInSync)
			done := op.Status.CompletionTime
			if current == nil || done != nil && !done.Before(&current.LastTransitionTime) {
				setNote(conds, op)
			}
		}
	}
}

func setNote(conds *[]metav1.Condition, op *v1alpha1.BrokerOperation) {
	n := op.Status.TargetInSync
	if n == nil {
		return
	}
	meta.SetStatusCondition(conds, metav1.Condition{Type: v1alpha1.ConditionInSync, Status: n.Status, Reason: n.Reason,
		Message: n.Message, ObservedGeneration: op.Spec.Generation})
}
