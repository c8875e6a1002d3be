package resync

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker"
	"github.com/lockstep-dev/lockstep/internal/catalog"
	"github.com/lockstep-dev/lockstep/internal/journal"
	"github.com/lockstep-dev/lockstep/internal/metrics"
)

const kindBinding = "ServiceBinding"

// Bindings re-reads every bound ServiceBinding from its broker once per
// Interval. A binding cannot be updated at a broker, so drift is reported,
// never corrected. The credentials a fetch returns are dropped unread: they
// are in the binding's Secret already, and go nowhere else.
type Bindings struct {
	Client   client.Client
	Catalogs *catalog.Cache
	Leases   *journal.Leases
	Limiter  *Limiter
	Recorder record.EventRecorder
	Interval time.Duration
	Timeout  time.Duration
	Clock    clock.PassiveClock

	schedule schedule
}

// Reconcile fetches the binding from its broker when it is due.
func (r *Bindings) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var b v1alpha1.ServiceBinding
	if err := r.Client.Get(ctx, req.NamespacedName, &b); err != nil {
		if apierrors.IsNotFound(err) {
			r.schedule.forget(req.NamespacedName)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	if b.DeletionTimestamp != nil || !bound(&b) {
		return reconcile.Result{}, nil
	}
	now := r.clock().Now()
	if wait := r.schedule.due(req.NamespacedName, now, r.Interval); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	next := reconcile.Result{RequeueAfter: r.schedule.next(req.NamespacedName, now, r.Interval)}
	holder, err := r.Leases.Holder(ctx, journal.Key{Kind: kindBinding, Namespace: b.Namespace, Name: b.Name})
	if err != nil {
		return reconcile.Result{}, err
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
	conds := append([]metav1.Condition(nil), b.Status.Conditions...)
	set := func(status metav1.ConditionStatus, reason, msg string) {
		metrics.ResyncResult(kindBinding, reason)
		meta.SetStatusCondition(&conds, metav1.Condition{Type: v1alpha1.ConditionInSync, Status: status, Reason: reason, Message: msg,
			ObservedGeneration: observed(conds, v1alpha1.ConditionInSync)})
	}
	if !plan.Service.BindingsRetrievable {
		set(metav1.ConditionUnknown, ReasonNotRetrievable, fmt.Sprintf(
			"broker %q does not let lockstep read bindings of service %q (bindings_retrievable is false): drift cannot be detected",
			entry.Broker, si.Spec.ServiceName))
		return next, r.write(ctx, &b, conds)
	}

	got, err := r.fetch(ctx, entry, &b, &si, plan)
	switch {
	case broker.IsNotFound(err) || broker.IsGone(err):
		msg := fmt.Sprintf("broker %q no longer holds binding %q (spec.externalID %s): it was deleted outside Kubernetes, or lost; "+
			"its credentials may no longer work: kubectl delete servicebinding %s -n %s, then create it again", entry.Broker, b.Name, b.Spec.ExternalID, b.Name, b.Namespace)
		set(metav1.ConditionFalse, ReasonGoneAtBroker, msg)
		r.event(&b, ReasonGoneAtBroker, msg)
	case broker.IsConcurrencyError(err):
		return next, nil
	case err != nil:
		set(metav1.ConditionFalse, ReasonBrokerUnreachable, fmt.Sprintf(
			"lockstep could not read binding %q from broker %q to compare it: %v; it tries again in %s", b.Name, entry.Broker, err, r.Interval))
	default:
		drift, err := Compare(State{Parameters: raw(b.Spec.Parameters)}, State{Parameters: got.Parameters})
		switch {
		case err != nil:
			set(metav1.ConditionFalse, ReasonBrokerUnreachable, fmt.Sprintf(
				"broker %q answered a fetch of binding %q that lockstep cannot compare: %v", entry.Broker, b.Name, err))
		case drift.None():
			if !meta.IsStatusConditionTrue(conds, v1alpha1.ConditionInSync) {
				set(metav1.ConditionTrue, ReasonInSync, fmt.Sprintf("broker %q holds the binding as this object says", entry.Broker))
			} else {
				metrics.ResyncResult(kindBinding, ReasonInSync)
			}
		default:
			msg := drift.Message(entry.Broker, entry.PlanName, "") +
				fmt.Sprintf("; a binding cannot be changed at its broker: delete servicebinding %s and create it again to apply this spec", b.Name)
			set(metav1.ConditionFalse, drift.Reason(), msg)
			r.event(&b, drift.Reason(), msg)
		}
	}
	return next, r.write(ctx, &b, conds)
}

// fetch reads the binding from its broker, within the per-broker limits.
// Only its parameters are kept.
func (r *Bindings) fetch(ctx context.Context, entry *catalog.Entry, b *v1alpha1.ServiceBinding, si *v1alpha1.ServiceInstance, plan catalog.Plan) (*broker.Binding, error) {
	ctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	done, err := r.Limiter.Acquire(ctx, entry.Broker)
	if err != nil {
		return nil, fmt.Errorf("waiting for a turn at broker %q: %w", entry.Broker, err)
	}
	defer done()
	got, err := entry.Client.GetBinding(ctx, broker.RequestMeta{}, broker.GetBindingRequest{
		InstanceID: si.Spec.ExternalID, BindingID: b.Spec.ExternalID, ServiceID: plan.Service.ID, PlanID: plan.Plan.ID})
	if err != nil {
		return nil, err
	}
	return &broker.Binding{Parameters: got.Parameters}, nil
}

func (r *Bindings) event(b *v1alpha1.ServiceBinding, reason, msg string) {
	if r.Recorder != nil {
		r.Recorder.Event(b, "Warning", reason, msg)
	}
}

// write patches the conditions when they changed, from the version they
// were read at.
func (r *Bindings) write(ctx context.Context, b *v1alpha1.ServiceBinding, conds []metav1.Condition) error {
	if equalConditions(b.Status.Conditions, conds) {
		return nil
	}
	patch := client.MergeFromWithOptions(b.DeepCopy(), client.MergeFromWithOptimisticLock{})
	b.Status.Conditions = conds
	if err := r.Client.Status().Patch(ctx, b, patch); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			log.FromContext(ctx).V(1).Info("binding changed while it was compared; compared again next time", "error", err.Error())
			return nil
		}
		return fmt.Errorf("writing what resync found into binding %s/%s: %w", b.Namespace, b.Name, err)
	}
	return nil
}

func (r *Bindings) clock() clock.PassiveClock {
	if r.Clock != nil {
		return r.Clock
	}
	return clock.RealClock{}
}

// bound reports whether the broker confirmed the binding: its bind (or
// adoption) succeeded.
func bound(b *v1alpha1.ServiceBinding) bool {
	last := b.Status.LastOperation
	return last != nil && (last.Verb == v1alpha1.VerbBind || last.Verb == v1alpha1.VerbAdopt) && last.State == v1alpha1.StateSucceeded
}
