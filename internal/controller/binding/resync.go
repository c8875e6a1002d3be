package binding

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
	"github.com/lockstep-dev/lockstep/internal/broker/osbclient"
	"github.com/lockstep-dev/lockstep/internal/brokercall"
	"github.com/lockstep-dev/lockstep/internal/catalog"
	"github.com/lockstep-dev/lockstep/internal/controller/resync"
	"github.com/lockstep-dev/lockstep/internal/journal"
	"github.com/lockstep-dev/lockstep/internal/metrics"
)

// resync reads the binding from its broker when it is due and compares
// it with its spec. A binding cannot be updated at a broker, so drift is
// reported, never corrected. The credentials a fetch returns are dropped
// unread: they are in the binding's Secret already, and go nowhere else.
func (r *Reconciler) resync(ctx context.Context, b *v1alpha1.ServiceBinding, status *v1alpha1.ServiceBindingStatus) (ctrl.Result, error) {
	if !bound(status) {
		return ctrl.Result{}, nil
	}
	key := types.NamespacedName{Namespace: b.Namespace, Name: b.Name}
	now := r.clock().Now()
	if wait := r.schedule.Due(key, now, r.ResyncInterval); wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	next := ctrl.Result{RequeueAfter: r.schedule.Next(key, now, r.ResyncInterval)}
	holder, err := r.Leases.Holder(ctx, journal.KeyOf(kind, b))
	if err != nil {
		return ctrl.Result{}, err
	}
	if holder != nil {
		return next, nil
	}
	var si v1alpha1.ServiceInstance
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: b.Spec.InstanceName}, &si); err != nil {
		return next, client.IgnoreNotFound(err)
	}
	entry, ok := r.Catalogs.Get(si.Spec.BrokerName)
	if !ok {
		return next, nil
	}
	plan, err := entry.Find(si.Spec.ServiceName, si.Spec.PlanName)
	if err != nil {
		return next, nil
	}
	set := func(s metav1.ConditionStatus, reason, msg string) {
		metrics.ResyncResult(string(kind), reason)
		resync.SetCondition(&status.Conditions, v1alpha1.ConditionInSync, s, reason, msg)
	}
	if !plan.Service.BindingsRetrievable {
		set(metav1.ConditionUnknown, resync.ReasonNotRetrievable, fmt.Sprintf(
			"broker %q does not let lockstep read bindings of service %q (bindings_retrievable is false): drift cannot be detected",
			entry.Broker, si.Spec.ServiceName))
		return next, nil
	}

	got, err := r.fetch(ctx, entry, b, &si, plan)
	switch {
	case osbclient.IsNotFound(err) || osbclient.IsGone(err):
		msg := fmt.Sprintf("broker %q no longer holds binding %q (spec.externalID %s): it was deleted outside Kubernetes, or lost; "+
			"its credentials may no longer work: kubectl delete servicebinding %s -n %s, then create it again", entry.Broker, b.Name, b.Spec.ExternalID, b.Name, b.Namespace)
		set(metav1.ConditionFalse, resync.ReasonGoneAtBroker, msg)
		r.event(b, resync.ReasonGoneAtBroker, msg)
	case osbclient.IsConcurrencyError(err):
	case err != nil:
		set(metav1.ConditionFalse, resync.ReasonBrokerUnreachable, fmt.Sprintf(
			"lockstep could not read binding %q from broker %q to compare it: %v; it tries again in %s", b.Name, entry.Broker, err, r.ResyncInterval))
	default:
		held := resync.State{Parameters: got.Parameters}
		if status.ParametersDigest == "" && len(b.Spec.ParametersFrom) > 0 {
			// Parameters from Secrets without a digest of what was sent:
			// nothing to compare them with, and the broker's are never shown.
			held.Parameters = nil
		}
		drift, err := resync.Compare(resync.State{Parameters: resync.Parameters(b.Spec.Parameters), ParametersDigest: status.ParametersDigest}, held)
		switch {
		case err != nil:
			set(metav1.ConditionFalse, resync.ReasonBrokerUnreachable, fmt.Sprintf(
				"broker %q answered a fetch of binding %q that lockstep cannot compare: %v", entry.Broker, b.Name, err))
		case drift.None():
			if !meta.IsStatusConditionTrue(status.Conditions, v1alpha1.ConditionInSync) {
				set(metav1.ConditionTrue, resync.ReasonInSync, fmt.Sprintf("broker %q holds the binding as this object says", entry.Broker))
			} else {
				metrics.ResyncResult(string(kind), resync.ReasonInSync)
			}
		default:
			msg := drift.Message(entry.Broker, entry.PlanName, "") +
				fmt.Sprintf("; a binding cannot be changed at its broker: delete servicebinding %s and create it again to apply this spec", b.Name)
			set(metav1.ConditionFalse, drift.Reason(), msg)
			r.event(b, drift.Reason(), msg)
		}
	}
	return next, nil
}

// fetch reads the binding from its broker, within the per-broker limits,
// as a call lockstep makes on its own. Only its parameters are kept.
func (r *Reconciler) fetch(ctx context.Context, entry *catalog.Entry, b *v1alpha1.ServiceBinding, si *v1alpha1.ServiceInstance, plan catalog.Plan) (*osbapi.Binding, error) {
	ctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	done, err := r.Limiter.Acquire(ctx, entry.Broker)
	if err != nil {
		return nil, fmt.Errorf("waiting for a turn at broker %q: %w", entry.Broker, err)
	}
	defer done()
	held, err := r.Protocol.Fetch(ctx, brokercall.ForBinding("", b, si, entry, plan, r.Protocol.Lockstep("", brokercall.ReasonResync)), "")
	if err != nil {
		return nil, err
	}
	return &osbapi.Binding{Parameters: held.Binding.Parameters}, nil
}

func (r *Reconciler) event(b *v1alpha1.ServiceBinding, reason, msg string) {
	if r.Recorder != nil {
		r.Recorder.Event(b, "Warning", reason, msg)
	}
}
