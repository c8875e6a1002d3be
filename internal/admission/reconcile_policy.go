package admission

import (
	"context"
	"fmt"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/journal"
	"github.com/lockstep-dev/lockstep/internal/typed/object"
)

// Gate decides, before any check, whether the broker takes part in a
// request at all: an object's reconcile policy can keep it out.
type Gate[T client.Object] interface {
	// Pass decides the request at once (done), or lets the chain go on.
	// An error refuses the request with its own status.
	Pass(ctx context.Context, a *Attributes[T]) (done bool, warnings admission.Warnings, err error)
}

// reconcilePolicy is the Gate of the lockstep.dev/reconcile-policy
// annotation (see api/v1alpha1):
//   - a value that is not a policy is refused, with the values there are;
//   - observe: a spec change is refused (lockstep never changes the broker
//     for the object), and a create must adopt what the broker holds;
//   - detach-on-delete and observe: a delete only removes the object; the
//     broker keeps what it holds, and the journal records a detach. No
//     catalog, no lock, no broker: this is the way out when the broker is
//     down or gone, or another operation is stuck on the object. Only the
//     checks in detachChecks run first (an instance's live bindings: a
//     binding left without its instance could never be unbound, nor
//     compared with its broker);
//   - adopt on create needs the external id of what the broker holds.
//
// Changing the annotation itself is a metadata-only update, which the chain
// allows before it gets here.
type reconcilePolicy[T client.Object] struct {
	kind    schema.GroupKind
	journal *journal.Journal
	// reader finds a binding's instance, whose broker a detach names.
	reader client.Reader
	// detachChecks run before a detach, and refuse it as they refuse any
	// delete.
	detachChecks []Check[T]
}

func (g *reconcilePolicy[T]) Pass(ctx context.Context, a *Attributes[T]) (bool, admission.Warnings, error) {
	obj := a.Object()
	kind := objectKind(obj, g.kind)
	policy, ok := v1alpha1.PolicyOf(obj)
	annotation := field.NewPath("metadata", "annotations").Key(v1alpha1.AnnotationReconcilePolicy)
	if !ok {
		return true, nil, invalid(kind, obj.GetName(), field.ErrorList{field.NotSupported(annotation, string(policy),
			[]string{string(v1alpha1.PolicyManage), string(v1alpha1.PolicyDetachOnDelete), string(v1alpha1.PolicyObserve)})})
	}
	word := strings.ToLower(kind.Kind)
	switch a.Operation {
	case admissionv1.Create:
		adopting := v1alpha1.Adopting(obj)
		if adopting && v1alpha1.ExternalIDOf(obj) == "" {
			return true, nil, invalid(kind, obj.GetName(), field.ErrorList{field.Required(field.NewPath("spec", "externalID"),
				fmt.Sprintf("%s=true adopts what the broker holds under this id: name it", v1alpha1.AnnotationAdopt))})
		}
		if policy == v1alpha1.PolicyObserve && !adopting {
			return true, nil, invalid(kind, obj.GetName(), field.ErrorList{field.Invalid(annotation, string(policy), fmt.Sprintf(
				"under observe lockstep never changes the broker, so it cannot create at the broker: to observe what the broker already holds, also set %s=true and spec.externalID",
				v1alpha1.AnnotationAdopt))})
		}
	case admissionv1.Update:
		if policy == v1alpha1.PolicyObserve {
			return true, nil, conflict("%s %q is observed (%s=observe): lockstep never changes it at the broker, so its spec cannot change; "+
				"to change it at the broker, manage it: kubectl annotate %s %s -n %s %s=manage --overwrite",
				word, obj.GetName(), v1alpha1.AnnotationReconcilePolicy, word, obj.GetName(), obj.GetNamespace(), v1alpha1.AnnotationReconcilePolicy)
		}
	case admissionv1.Delete:
		if policy == v1alpha1.PolicyManage || obj.GetDeletionTimestamp() != nil {
			return false, nil, nil
		}
		for _, c := range g.detachChecks {
			if _, w, err := c.Check(ctx, a); err != nil {
				return true, w, err
			}
		}
		if a.DryRun {
			return true, nil, nil
		}
		if err := g.detach(ctx, a, policy); err != nil {
			return true, nil, unavailable("could not record that %s %q is detached from its broker: %v; nothing was changed: retry", word, obj.GetName(), err)
		}
		return true, admission.Warnings{fmt.Sprintf("%s %q is deleted without its broker (%s=%s): the broker keeps what it holds",
			word, obj.GetName(), v1alpha1.AnnotationReconcilePolicy, policy)}, nil
	}
	return false, nil, nil
}

// detach records the delete of an object whose broker keeps what it holds:
// one record, final at once (nothing to follow or undo), so that
// `kubectl get brokeroperations` shows who let go of what.
//
// An object is detached once. The API server may ask again for the same
// delete: it runs admission again when the delete's write conflicts with
// another write of the object (its status, say). The record's name derives
// from the object's uid, so a second ask finds the record written, and
// only commits it should the first ask have left it Pending.
func (g *reconcilePolicy[T]) detach(ctx context.Context, a *Attributes[T], policy v1alpha1.ReconcilePolicy) error {
	obj := a.Old
	kind := objectKind(obj, g.kind)
	group := ""
	if kind.Group != v1alpha1.GroupVersion.Group {
		group = kind.Group
	}
	in := journal.Intent{
		ID: string(obj.GetUID()), Target: obj, Kind: v1alpha1.TargetKind(kind.Kind), APIGroup: group, ExternalID: v1alpha1.ExternalIDOf(obj), Broker: g.brokerOf(ctx, obj),
		Verb: v1alpha1.VerbDetach, User: a.User,
	}
	recordCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	_, err := g.journal.Record(recordCtx, g.journal.Draft(in), obj, journal.Answer{Phase: v1alpha1.PhaseCommitted,
		Description: fmt.Sprintf("deleted without its broker (%s=%s); the broker keeps what it holds", v1alpha1.AnnotationReconcilePolicy, policy)})
	return err // a record found answered (a second ask) keeps its answer
}

// brokerOf names the ServiceBroker of an instance, or of a binding's
// instance; "" when the instance is gone.
func (g *reconcilePolicy[T]) brokerOf(ctx context.Context, obj client.Object) string {
	switch o := obj.(type) {
	case *v1alpha1.ServiceInstance:
		return o.Spec.BrokerName
	case *v1alpha1.ServiceBinding:
		if g.reader == nil {
			return ""
		}
		if si, err := object.Instance(ctx, g.reader, o.Spec.InstanceKind, client.ObjectKey{Namespace: o.Namespace, Name: o.Spec.InstanceName}); err == nil {
			return si.Spec.BrokerName
		}
	}
	return ""
}

// wayOut is what a refused delete says when the broker cannot carry it
// out: how to delete the object without the broker.
func wayOut(kind v1alpha1.TargetKind, namespace, name string) string {
	word := strings.ToLower(string(kind))
	return fmt.Sprintf("to delete it without the broker (which then keeps what it holds): kubectl annotate %s %s -n %s %s=%s, then delete again",
		word, name, namespace, v1alpha1.AnnotationReconcilePolicy, v1alpha1.PolicyDetachOnDelete)
}
