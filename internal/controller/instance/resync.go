package instance

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
	"github.com/lockstep-dev/lockstep/internal/broker/osbclient"
	"github.com/lockstep-dev/lockstep/internal/brokercall"
	"github.com/lockstep-dev/lockstep/internal/catalog"
	"github.com/lockstep-dev/lockstep/internal/controller/resync"
	"github.com/lockstep-dev/lockstep/internal/journal"
	"github.com/lockstep-dev/lockstep/internal/metrics"
)

// resync reads the instance from its broker when it is due, compares it
// with what lockstep last applied, and writes the result into status:
// InSync (and Ready=False when the broker lost it), the dashboard URL the
// broker reports. Under the manage policy, drift is corrected.
func (r *Reconciler) resync(ctx context.Context, si *v1alpha1.ServiceInstance, status *v1alpha1.ServiceInstanceStatus) (reconcile.Result, error) {
	if !applied(status) {
		return reconcile.Result{}, nil // nothing confirmed at the broker yet
	}
	key := types.NamespacedName{Namespace: si.Namespace, Name: si.Name}
	if wait := r.schedule.Due(key, r.clock().Now(), r.ResyncInterval); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	next := reconcile.Result{RequeueAfter: r.schedule.Next(key, r.clock().Now(), r.ResyncInterval)}

	holder, err := r.Leases.Holder(ctx, journal.KeyOf(kind, si))
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
	if !plan.Service.InstancesRetrievable {
		r.result(si, resync.ReasonNotRetrievable, nil)
		setInSync(status, metav1.ConditionUnknown, resync.ReasonNotRetrievable, fmt.Sprintf(
			"broker %q does not let lockstep read instances of service %q (instances_retrievable is false): drift cannot be detected",
			entry.Broker, si.Spec.ServiceName))
		return next, nil
	}

	got, err := r.fetch(ctx, entry, si, status, plan)
	switch {
	case osbclient.IsNotFound(err) || osbclient.IsGone(err):
		r.result(si, resync.ReasonGoneAtBroker, nil)
		msg := fmt.Sprintf("broker %q no longer holds instance %q (spec.externalID %s): it was deleted outside Kubernetes, or lost; "+
			"kubectl delete serviceinstance %s -n %s lets go of this object", entry.Broker, si.Name, si.Spec.ExternalID, si.Name, si.Namespace)
		resync.SetCondition(&status.Conditions, v1alpha1.ConditionReady, metav1.ConditionFalse, resync.ReasonGoneAtBroker, msg)
		setInSync(status, metav1.ConditionFalse, resync.ReasonGoneAtBroker, msg)
		return next, nil
	case osbclient.IsConcurrencyError(err):
		return next, nil // the broker is in the middle of something: look next time
	case err != nil:
		r.result(si, resync.ReasonBrokerUnreachable, nil)
		setInSync(status, metav1.ConditionFalse, resync.ReasonBrokerUnreachable, fmt.Sprintf(
			"lockstep could not read instance %q from broker %q to compare it: %v; it tries again in %s", si.Name, entry.Broker, err, r.ResyncInterval))
		return next, nil
	}

	if got.DashboardURL != "" {
		status.DashboardURL = got.DashboardURL
	}
	last := lastApplied(si, status, plan.Plan.ID)
	applied := resync.State{PlanID: last.PlanID, Parameters: resync.Parameters(last.Parameters), ParametersDigest: last.ParametersDigest}
	held := resync.State{PlanID: got.PlanID, Parameters: got.Parameters}
	if last.ParametersDigest == "" && len(si.Spec.ParametersFrom) > 0 {
		// Parameters from Secrets without a digest of what was sent (the
		// status has not caught up with the operation that sent them):
		// compare the plan only, and never show the broker's parameters.
		held.Parameters = nil
	}
	drift, err := resync.Compare(applied, held)
	if err != nil {
		r.result(si, resync.ReasonBrokerUnreachable, nil)
		setInSync(status, metav1.ConditionFalse, resync.ReasonBrokerUnreachable, fmt.Sprintf(
			"broker %q answered a fetch of instance %q that lockstep cannot compare: %v", entry.Broker, si.Name, err))
		return next, nil
	}
	drift, correctable := createOnlyDrift(plan.Schemas, applied, held, drift)
	if drift.None() {
		r.result(si, resync.ReasonInSync, nil)
		if !meta.IsStatusConditionTrue(status.Conditions, v1alpha1.ConditionInSync) {
			setInSync(status, metav1.ConditionTrue, resync.ReasonInSync, fmt.Sprintf("broker %q holds the instance as this object says", entry.Broker))
		}
		if !meta.IsStatusConditionTrue(status.Conditions, v1alpha1.ConditionReady) {
			resync.SetCondition(&status.Conditions, v1alpha1.ConditionReady, metav1.ConditionTrue, resync.ReasonInSync,
				fmt.Sprintf("broker %q holds the instance as specified", entry.Broker))
		}
		return next, nil
	}

	msg := drift.Message(entry.Broker, entry.PlanName, last.PlanName)
	policy, _ := v1alpha1.PolicyOf(si)
	switch {
	case policy == v1alpha1.PolicyObserve:
		msg += fmt.Sprintf("; reconcile policy %s: lockstep reports it and changes nothing", policy)
	case !correctable:
		msg += "; these are create-only parameters, which no update can change: lockstep reports it and changes nothing " +
			"(to have them as this object says, delete the instance and create it again)"
	default:
		if err := r.correct(ctx, si, entry, plan, got.PlanID); err != nil {
			metrics.ResyncCorrection(string(kind), "refused")
			msg += fmt.Sprintf("; lockstep could not re-apply this object's spec: %v", err)
		} else {
			metrics.ResyncCorrection(string(kind), "started")
			msg += "; lockstep re-applies this object's spec at the broker (kubectl get brokeroperations shows it)"
		}
	}
	r.result(si, drift.Reason(), &msg)
	setInSync(status, metav1.ConditionFalse, drift.Reason(), msg)
	return next, nil
}

// fetch reads the instance from its broker, within the per-broker limits,
// as a call lockstep makes on its own.
func (r *Reconciler) fetch(ctx context.Context, entry *catalog.Entry, si *v1alpha1.ServiceInstance, status *v1alpha1.ServiceInstanceStatus, plan catalog.Plan) (*osbapi.GetInstanceResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	done, err := r.Limiter.Acquire(ctx, entry.Broker)
	if err != nil {
		return nil, fmt.Errorf("waiting for a turn at broker %q: %w", entry.Broker, err)
	}
	defer done()
	req := brokercall.ForInstance("", si, entry, plan, r.Protocol.Lockstep("", brokercall.ReasonResync))
	req.PlanID = ""
	if status.LastApplied != nil {
		req.PlanID = status.LastApplied.PlanID
	}
	held, err := r.Protocol.Fetch(ctx, req, "")
	return held.Instance, err
}

// result counts one fetch and, for drift, reports it as an event.
func (r *Reconciler) result(si *v1alpha1.ServiceInstance, reason string, drift *string) {
	metrics.ResyncResult(string(kind), reason)
	if drift != nil && r.Recorder != nil {
		r.Recorder.Event(si, "Warning", reason, *drift)
	}
}

// applied reports whether the broker confirmed the instance at least once.
func applied(status *v1alpha1.ServiceInstanceStatus) bool {
	return status.LastApplied != nil || meta.FindStatusCondition(status.Conditions, v1alpha1.ConditionReady) != nil
}

// setInSync sets the InSync condition of an instance's status.
func setInSync(status *v1alpha1.ServiceInstanceStatus, s metav1.ConditionStatus, reason, msg string) {
	resync.SetCondition(&status.Conditions, v1alpha1.ConditionInSync, s, reason, msg)
}

// lastApplied is what lockstep last applied at the broker: as recorded in
// status, or, for an instance committed before that was recorded, its
// spec (a committed spec is one the broker accepted).
func lastApplied(si *v1alpha1.ServiceInstance, status *v1alpha1.ServiceInstanceStatus, planID string) v1alpha1.AppliedInstance {
	if status.LastApplied != nil {
		return *status.LastApplied
	}
	return v1alpha1.AppliedInstance{PlanName: si.Spec.PlanName, PlanID: planID, Parameters: si.Spec.Parameters}
}
