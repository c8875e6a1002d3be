package instance

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/journal"
)

// FromJournal writes an answered operation into status once: its last
// operation and, for a committed provision, update or adoption, Ready,
// InSync, the dashboard URL, the observed generation and what was applied.
// Once the status reports that operation, it is not applied again, so that
// what resync found since stays. An operation still running hands over
// its InSync note (an outcome not known yet) on every pass.
//
// A commit the status never reported, because a later record (a failed
// update, say) was answered before the status caught up with it, is
// reported first, once: it moves the observed generation.
func (Kind) FromJournal(si *v1alpha1.ServiceInstance, status *v1alpha1.ServiceInstanceStatus, records []v1alpha1.BrokerOperation) {
	answered := journal.Answered(records)
	if c := journal.LastCommitted(records, v1alpha1.VerbProvision, v1alpha1.VerbUpdate, v1alpha1.VerbAdopt); c != nil && c != answered &&
		c.Spec.Generation > status.ObservedGeneration {
		committed(si, status, c)
	}
	isNew := false
	if answered != nil {
		last := journal.LastOperation(answered)
		if !equality.Semantic.DeepEqual(status.LastOperation, last) {
			status.LastOperation = last
			if answered.Status.Phase == v1alpha1.PhaseCommitted {
				committed(si, status, answered)
			}
			isNew = true
		}
	}
	journal.ApplyNotes(&status.Conditions, answered, isNew, records)
}

// committed reports a provision, update or adoption the broker carried out
// and the API server persisted.
func committed(si *v1alpha1.ServiceInstance, status *v1alpha1.ServiceInstanceStatus, op *v1alpha1.BrokerOperation) {
	reason, ok := map[v1alpha1.Verb]string{v1alpha1.VerbProvision: "Provisioned", v1alpha1.VerbUpdate: "Updated", v1alpha1.VerbAdopt: "Adopted"}[op.Spec.Verb]
	if !ok {
		return
	}
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue,
		Reason: reason, Message: fmt.Sprintf("broker %q holds the instance as specified", op.Spec.BrokerName), ObservedGeneration: op.Spec.Generation})
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{Type: v1alpha1.ConditionInSync, Status: metav1.ConditionTrue,
		Reason: "Committed", Message: "what the broker holds equals this object", ObservedGeneration: op.Spec.Generation})
	if op.Status.DashboardURL != "" {
		status.DashboardURL = op.Status.DashboardURL
	}
	status.ObservedGeneration = max(status.ObservedGeneration, op.Spec.Generation)
	if journal.Applies(op, si) {
		// spec.parameters only, and the digest of the parameters sent
		// when some came from Secrets: never the Secrets' values.
		status.LastApplied = &v1alpha1.AppliedInstance{PlanName: si.Spec.PlanName, PlanID: op.Spec.PlanID, Parameters: si.Spec.Parameters.DeepCopy(),
			ParametersDigest: op.Spec.ParametersDigest, CreateOnlyDigest: op.Spec.CreateOnlyDigest}
	}
}
