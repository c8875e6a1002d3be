package binding

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/controller/brokered"
	"github.com/lockstep-dev/lockstep/internal/credentials"
	"github.com/lockstep-dev/lockstep/internal/journal"
)

// FromJournal writes an answered operation into status once: its last
// operation and, for a committed bind or adoption, InSync. Once the status
// reports that operation, it is not applied again, so that what resync
// found since stays. An operation still running hands over its InSync note
// on every pass.
func (Kind) FromJournal(_ *v1alpha1.ServiceBinding, status *v1alpha1.ServiceBindingStatus, records []v1alpha1.BrokerOperation) {
	answered := journal.Answered(records)
	isNew := false
	if answered != nil {
		last := journal.LastOperation(answered)
		if !equality.Semantic.DeepEqual(status.LastOperation, last) {
			status.LastOperation = last
			if answered.Status.Phase == v1alpha1.PhaseCommitted && (answered.Spec.Verb == v1alpha1.VerbBind || answered.Spec.Verb == v1alpha1.VerbAdopt) {
				meta.SetStatusCondition(&status.Conditions, metav1.Condition{Type: v1alpha1.ConditionInSync, Status: metav1.ConditionTrue,
					Reason: "Committed", Message: fmt.Sprintf("broker %q holds the binding", answered.Spec.BrokerName), ObservedGeneration: answered.Spec.Generation})
				status.ParametersDigest = answered.Spec.ParametersDigest
			}
			isNew = true
		}
	}
	journal.ApplyNotes(&status.Conditions, answered, isNew, records)
}

// Observe lets the binding adopt its Secret, and sets the Ready condition:
// True once the credentials are in the binding's Secret, False while the
// broker no longer holds the binding (resync found it gone: its
// credentials may no longer work).
func (k Kind) Observe(ctx context.Context, b *v1alpha1.ServiceBinding, status *v1alpha1.ServiceBindingStatus) error {
	secret, err := credentials.Find(ctx, k.Secrets, b)
	if err != nil {
		return err
	}
	if err := credentials.Adopt(ctx, k.Client, b, secret); err != nil {
		return err
	}
	stored := credentials.Stored(secret, b)
	cond := metav1.Condition{Type: v1alpha1.ConditionReady, ObservedGeneration: b.Generation,
		Status: metav1.ConditionFalse, Reason: "CredentialsPending", Message: "waiting for the broker to finish the bind"}
	switch {
	case brokered.IsGone(status.Conditions):
		inSync := meta.FindStatusCondition(status.Conditions, v1alpha1.ConditionInSync)
		cond.Reason, cond.Message = inSync.Reason, inSync.Message
	case stored:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, "CredentialsStored", fmt.Sprintf("credentials are in Secret %q", b.Spec.SecretName)
	case bound(status):
		cond.Reason, cond.Message = "CredentialsMissing", fmt.Sprintf(
			"the bind finished, but Secret %q with its credentials is gone (deleted?); the broker gives credentials only once: delete this binding and create it again for new ones",
			b.Spec.SecretName)
	}
	meta.SetStatusCondition(&status.Conditions, cond)
	status.ObservedGeneration = b.Generation
	status.Binding = provisioned(b, stored && bound(status) && !brokered.IsGone(status.Conditions))
	return nil
}

// Confirmed reports whether the binding's bind (or adoption) finished at
// the broker.
func (Kind) Confirmed(status *v1alpha1.ServiceBindingStatus) bool { return bound(status) }

// provisioned is status.binding, which makes the binding a Provisioned
// Service of the Service Binding for Kubernetes specification: the name of
// its Secret once the bind is committed and the Secret holds the
// credentials, nil otherwise (while the bind runs, once the Secret is gone,
// and while the broker no longer holds the binding), so that nothing
// projects credentials that are not there or may no longer work.
func provisioned(b *v1alpha1.ServiceBinding, ready bool) *v1alpha1.BindingSecretReference {
	if !ready {
		return nil
	}
	return &v1alpha1.BindingSecretReference{Name: b.Spec.SecretName}
}

// bound reports whether the binding's bind (or adoption) finished at the
// broker. An unbind is only asked of a bound binding, and one that did not
// succeed leaves it bound: a binding whose unbind was refused (its broker
// down, say, while its namespace is deleted and the namespace controller
// deletes the Secret) has lost its credentials, not waiting for them.
func bound(status *v1alpha1.ServiceBindingStatus) bool {
	last := status.LastOperation
	if last == nil {
		return false
	}
	switch last.Verb {
	case v1alpha1.VerbBind, v1alpha1.VerbAdopt:
		return last.State == v1alpha1.StateSucceeded
	case v1alpha1.VerbUnbind:
		return last.State != v1alpha1.StateSucceeded
	}
	return false
}
