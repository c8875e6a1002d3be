package resync

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
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

const kindInstance = "ServiceInstance"

// Instances re-reads every ready ServiceInstance from its broker once per
// Interval and compares it with what lockstep last applied.
type Instances struct {
	Client   client.Client
	Catalogs *catalog.Cache
	Leases   *journal.Leases
	Journal  *journal.Journal
	Limiter  *Limiter
	Recorder record.EventRecorder
	// Interval is the time between two fetches of one object; each is
	// jittered to between 90% and 100% of it.
	Interval time.Duration
	// Timeout bounds one fetch, the wait for the limiter included.
	Timeout time.Duration
	// Identity is who lockstep is: the requester of its corrections.
	Identity string
	// ClusterID goes into the context of a correction, as in admission.
	ClusterID string
	Clock     clock.PassiveClock

	schedule schedule
}

// Reconcile fetches the instance from its broker when it is due.
func (r *Instances) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var si v1alpha1.ServiceInstance
	if err := r.Client.Get(ctx, req.NamespacedName, &si); err != nil {
		if apierrors.IsNotFound(err) {
			r.schedule.forget(req.NamespacedName)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	if si.DeletionTimestamp != nil || !applied(&si) {
		return reconcile.Result{}, nil // nothing confirmed at the broker yet, or going away
	}
	if wait := r.schedule.due(req.NamespacedName, r.clock().Now(), r.Interval); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	next := reconcile.Result{RequeueAfter: r.schedule.next(req.NamespacedName, r.clock().Now(), r.Interval)}

	holder, err := r.Leases.Holder(ctx, journal.Key{Kind: kindInstance, Namespace: si.Namespace, Name: si.Name})
	if err != nil {
		return reconcile.Result{}, err
	}
	if holder != nil {
		// A change is in flight; the operations reconciler follows it.
		return next, nil
	}
	entry, ok := r.Catalogs.Get(si.Spec.BrokerName)
	if !ok {
		return next, nil // its ServiceBroker is gone or not loaded; admission says so on the next change
	}
	plan, err := entry.Find(si.Spec.ServiceName, si.Spec.PlanName)
	if err != nil {
		return next, nil
	}
	status := si.Status.DeepCopy()
	if !plan.Service.InstancesRetrievable {
		r.result(&si, ReasonNotRetrievable, nil)
		setInSync(status, metav1.ConditionUnknown, ReasonNotRetrievable, fmt.Sprintf(
			"broker %q does not let lockstep read instances of service %q (instances_retrievable is false): drift cannot be detected",
			entry.Broker, si.Spec.ServiceName))
		return next, r.write(ctx, &si, status)
	}

	got, err := r.fetch(ctx, entry, &si, plan.Service.ID)
	switch {
	case broker.IsNotFound(err) || broker.IsGone(err):
		r.result(&si, ReasonGoneAtBroker, nil)
		msg := fmt.Sprintf("broker %q no longer holds instance %q (spec.externalID %s): it was deleted outside Kubernetes, or lost; "+
			"kubectl delete serviceinstance %s -n %s lets go of this object", entry.Broker, si.Name, si.Spec.ExternalID, si.Name, si.Namespace)
		setCondition(status, v1alpha1.ConditionReady, metav1.ConditionFalse, ReasonGoneAtBroker, msg)
		setInSync(status, metav1.ConditionFalse, ReasonGoneAtBroker, msg)
		return next, r.write(ctx, &si, status)
	case broker.IsConcurrencyError(err):
		return next, nil // the broker is in the middle of something: look next time
	case err != nil:
		r.result(&si, ReasonBrokerUnreachable, nil)
		setInSync(status, metav1.ConditionFalse, ReasonBrokerUnreachable, fmt.Sprintf(
			"lockstep could not read instance %q from broker %q to compare it: %v; it tries again in %s", si.Name, entry.Broker, err, r.Interval))
		return next, r.write(ctx, &si, status)
	}

	if got.DashboardURL != "" {
		status.DashboardURL = got.DashboardURL
	}
	last := lastApplied(&si, plan.Plan.ID)
	drift, err := Compare(State{PlanID: last.PlanID, Parameters: raw(last.Parameters)}, State{PlanID: got.PlanID, Parameters: got.Parameters})
	if err != nil {
		r.result(&si, ReasonBrokerUnreachable, nil)
		setInSync(status, metav1.ConditionFalse, ReasonBrokerUnreachable, fmt.Sprintf(
			"broker %q answered a fetch of instance %q that lockstep cannot compare: %v", entry.Broker, si.Name, err))
		return next, r.write(ctx, &si, status)
	}
	if drift.None() {
		r.result(&si, ReasonInSync, nil)
		if !meta.IsStatusConditionTrue(status.Conditions, v1alpha1.ConditionInSync) {
			setInSync(status, metav1.ConditionTrue, ReasonInSync, fmt.Sprintf("broker %q holds the instance as this object says", entry.Broker))
		}
		if !meta.IsStatusConditionTrue(status.Conditions, v1alpha1.ConditionReady) {
			setCondition(status, v1alpha1.ConditionReady, metav1.ConditionTrue, ReasonInSync, fmt.Sprintf("broker %q holds the instance as specified", entry.Broker))
		}
		return next, r.write(ctx, &si, status)
	}

	msg := drift.Message(entry.Broker, entry.PlanName, last.PlanName)
	policy, _ := v1alpha1.PolicyOf(&si)
	switch {
	case policy == v1alpha1.PolicyObserve:
		msg += fmt.Sprintf("; reconcile policy %s: lockstep reports it and changes nothing", policy)
	default:
		if err := r.correct(ctx, &si, entry, plan, got.PlanID); err != nil {
			metrics.ResyncCorrection(kindInstance, "refused")
			msg += fmt.Sprintf("; lockstep could not re-apply this object's spec: %v", err)
		} else {
			metrics.ResyncCorrection(kindInstance, "started")
			msg += "; lockstep re-applies this object's spec at the broker (kubectl get brokeroperations shows it)"
		}
	}
	r.result(&si, drift.Reason(), &msg)
	setInSync(status, metav1.ConditionFalse, drift.Reason(), msg)
	return next, r.write(ctx, &si, status)
}

// fetch reads the instance from its broker, within the per-broker limits.
func (r *Instances) fetch(ctx context.Context, entry *catalog.Entry, si *v1alpha1.ServiceInstance, serviceID string) (*broker.GetInstanceResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	done, err := r.Limiter.Acquire(ctx, entry.Broker)
	if err != nil {
		return nil, fmt.Errorf("waiting for a turn at broker %q: %w", entry.Broker, err)
	}
	defer done()
	planID := ""
	if si.Status.LastApplied != nil {
		planID = si.Status.LastApplied.PlanID
	}
	return entry.Client.GetInstance(ctx, broker.RequestMeta{}, broker.GetInstanceRequest{
		InstanceID: si.Spec.ExternalID, ServiceID: serviceID, PlanID: planID})
}

// result counts one fetch and, for drift, reports it as an event.
func (r *Instances) result(si *v1alpha1.ServiceInstance, reason string, drift *string) {
	metrics.ResyncResult(kindInstance, reason)
	if drift != nil && r.Recorder != nil {
		r.Recorder.Event(si, "Warning", reason, *drift)
	}
}

// write patches the status when it changed, from the version it was read
// at: an operation's commit in between makes this pass look again.
func (r *Instances) write(ctx context.Context, si *v1alpha1.ServiceInstance, status *v1alpha1.ServiceInstanceStatus) error {
	if equalStatus(&si.Status, status) {
		return nil
	}
	patch := client.MergeFromWithOptions(si.DeepCopy(), client.MergeFromWithOptimisticLock{})
	si.Status = *status
	if err := r.Client.Status().Patch(ctx, si, patch); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			log.FromContext(ctx).V(1).Info("instance changed while it was compared; compared again next time", "error", err.Error())
			return nil
		}
		return fmt.Errorf("writing what resync found into instance %s/%s: %w", si.Namespace, si.Name, err)
	}
	return nil
}

func (r *Instances) clock() clock.PassiveClock {
	if r.Clock != nil {
		return r.Clock
	}
	return clock.RealClock{}
}

// applied reports whether the broker confirmed the instance at least once.
func applied(si *v1alpha1.ServiceInstance) bool {
	return si.Status.LastApplied != nil || meta.FindStatusCondition(si.Status.Conditions, v1alpha1.ConditionReady) != nil
}

// lastApplied is what lockstep last applied at the broker: as recorded in
// status, or, for an instance committed before that was recorded, its
// spec (a committed spec is one the broker accepted).
func lastApplied(si *v1alpha1.ServiceInstance, planID string) v1alpha1.AppliedInstance {
	if si.Status.LastApplied != nil {
		return *si.Status.LastApplied
	}
	return v1alpha1.AppliedInstance{PlanName: si.Spec.PlanName, PlanID: planID, Parameters: si.Spec.Parameters}
}

func raw(p *runtime.RawExtension) json.RawMessage {
	if p == nil || len(p.Raw) == 0 {
		return nil
	}
	return p.Raw
}
