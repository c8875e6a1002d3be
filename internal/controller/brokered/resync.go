package brokered

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/osbclient"
	"github.com/lockstep-dev/lockstep/internal/brokercall"
	"github.com/lockstep-dev/lockstep/internal/controller/resync"
	"github.com/lockstep-dev/lockstep/internal/journal"
	"github.com/lockstep-dev/lockstep/internal/metrics"
	"github.com/lockstep-dev/lockstep/internal/parametersfrom"
	"github.com/lockstep-dev/lockstep/internal/tracing"
)

// resync reads the object from its broker when it is due, compares it
// with what lockstep last applied, and writes the result into status:
// InSync, and Ready=False while the broker no longer holds it. What is
// done about drift is the kind's (an instance corrects it under the manage
// policy, a binding reports it).
func (r *Reconciler[T, S]) resync(ctx context.Context, obj T, status *S, records []v1alpha1.BrokerOperation) (reconcile.Result, error) {
	if !r.Kind.Confirmed(status) {
		return reconcile.Result{}, nil // nothing confirmed at the broker yet
	}
	key := client.ObjectKeyFromObject(obj)
	now := r.clock().Now()
	if wait := r.schedule.Due(key, now, r.ResyncInterval); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	later := func() reconcile.Result {
		return reconcile.Result{RequeueAfter: r.schedule.Next(key, now, r.ResyncInterval)}
	}

	holder, err := r.Leases.Holder(ctx, journal.KeyOf(r.Kind.Kind(), obj))
	if err != nil {
		return reconcile.Result{}, err
	}
	if holder != nil {
		// A change is in flight; the operations reconciler follows it.
		return later(), nil
	}
	t, ok, err := r.target(ctx, obj, false)
	if err != nil || !ok {
		// Its instance, ServiceBroker or plan is gone or not loaded:
		// admission says so on the next change.
		return later(), client.IgnoreNotFound(err)
	}
	ctx, span := tracing.Start(ctx, tracing.SpanResync)
	defer span.End()
	seen, err := r.compare(ctx, obj, status, t, records)
	if span.IsRecording() {
		span.SetAttributes(tracing.AttrKind.String(string(r.Kind.Kind())), tracing.AttrNamespace.String(obj.GetNamespace()),
			tracing.AttrName.String(obj.GetName()), tracing.AttrBroker.String(t.Entry.Broker))
		if c := meta.FindStatusCondition(*r.Kind.Conditions(status), v1alpha1.ConditionInSync); c != nil {
			span.SetAttributes(tracing.AttrResyncResult.String(c.Reason))
		}
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	if seen == stale {
		// The cache had not caught up with a change the broker made
		// meanwhile: still due, compared again in a moment.
		return reconcile.Result{RequeueAfter: recompare}, nil
	}
	return later(), nil
}

// recompare is how soon an object is compared again when the cache had
// not caught up with its last change.
const recompare = time.Second

// compare fetches the object at t and writes into status how it compares
// with what lockstep last applied. When the broker answered other than
// lockstep last applied, it writes nothing unless that answer is judged
// against what is current (see current), and says so.
func (r *Reconciler[T, S]) compare(ctx context.Context, obj T, status *S, t Target, records []v1alpha1.BrokerOperation) (freshness, error) {
	conds := r.Kind.Conditions(status)
	w := word(r.Kind.Kind())
	applied := r.Kind.Applied(obj, status, t)
	req := r.Kind.Request("", obj, t, r.Protocol.Lockstep("", brokercall.ReasonResync))
	if applied.PlanID != "" {
		req.PlanID = applied.PlanID
	}
	if !req.Retrievable {
		r.result(obj, resync.ReasonNotRetrievable, nil)
		setInSync(conds, metav1.ConditionUnknown, resync.ReasonNotRetrievable, fmt.Sprintf(
			"broker %q does not let lockstep read %ss of service %q (%ss_retrievable is false): drift cannot be detected",
			t.Entry.Broker, w, t.Instance.Spec.ServiceName, w))
		return fresh, nil
	}

	got, err := r.fetch(ctx, req)
	switch {
	case osbclient.IsNotFound(err) || osbclient.IsGone(err):
		if seen, err := r.current(ctx, obj, records); seen != fresh || err != nil {
			return seen, err
		}
		r.gone(obj, conds, req)
		return fresh, nil
	case osbclient.IsConcurrencyError(err):
		return fresh, nil // the broker is in the middle of something: look next time
	case err != nil:
		r.result(obj, resync.ReasonBrokerUnreachable, nil)
		setInSync(conds, metav1.ConditionFalse, resync.ReasonBrokerUnreachable, fmt.Sprintf(
			"lockstep could not read %s %q from broker %q to compare it: %v; it tries again in %s", w, obj.GetName(), t.Entry.Broker, err, r.ResyncInterval))
		return fresh, nil
	}

	held := r.Kind.Held(status, got)
	if applied.ParametersDigest == "" && applied.FromSecrets {
		// Parameters from Secrets without a digest of what was sent (the
		// status has not caught up with the operation that sent them):
		// compare the plan only, and never show the broker's parameters.
		held.Parameters = nil
	}
	drift, err := resync.Compare(applied.State, held)
	if err != nil {
		r.result(obj, resync.ReasonBrokerUnreachable, nil)
		setInSync(conds, metav1.ConditionFalse, resync.ReasonBrokerUnreachable, fmt.Sprintf(
			"broker %q answered a fetch of %s %q that lockstep cannot compare: %v", t.Entry.Broker, w, obj.GetName(), err))
		return fresh, nil
	}
	if !drift.None() {
		if seen, err := r.current(ctx, obj, records); seen != fresh || err != nil {
			return seen, err
		}
	}
	drift, done := r.Kind.Drifted(ctx, obj, t, applied, held, drift)
	if drift.None() {
		if parametersfrom.Stale(applied.ParametersDigest) && held.Parameters != nil {
			r.Kind.Rekey(status, t, held)
		}
		r.result(obj, resync.ReasonInSync, nil)
		if !meta.IsStatusConditionTrue(*conds, v1alpha1.ConditionInSync) {
			setInSync(conds, metav1.ConditionTrue, resync.ReasonInSync, fmt.Sprintf("broker %q holds the %s as this object says", t.Entry.Broker, w))
		}
		if ready := meta.FindStatusCondition(*conds, v1alpha1.ConditionReady); ready == nil || ready.Reason == resync.ReasonGoneAtBroker {
			// Found again: ready, as it was before resync found it gone.
			resync.SetCondition(conds, v1alpha1.ConditionReady, metav1.ConditionTrue, resync.ReasonInSync,
				fmt.Sprintf("broker %q holds the %s as specified", t.Entry.Broker, w))
		}
		return fresh, nil
	}
	msg := drift.Message(t.Entry.Broker, t.Entry.PlanName, applied.PlanName) + done
	r.result(obj, drift.Reason(), &msg)
	setInSync(conds, metav1.ConditionFalse, drift.Reason(), msg)
	return fresh, nil
}

// gone reports an object its broker no longer holds: not in sync, not
// ready, and an event the first time it is found so.
func (r *Reconciler[T, S]) gone(obj T, conds *[]metav1.Condition, req brokercall.Request) {
	id := req.InstanceID
	if req.BindingID != "" {
		id = req.BindingID
	}
	msg := fmt.Sprintf("broker %q no longer holds %s %q (spec.externalID %s): it was deleted outside Kubernetes, or lost; %s",
		req.Broker, word(r.Kind.Kind()), obj.GetName(), id, r.Kind.GoneAdvice(obj))
	var event *string
	if !IsGone(*conds) {
		event = &msg
	}
	r.result(obj, resync.ReasonGoneAtBroker, event)
	resync.SetCondition(conds, v1alpha1.ConditionReady, metav1.ConditionFalse, resync.ReasonGoneAtBroker, msg)
	setInSync(conds, metav1.ConditionFalse, resync.ReasonGoneAtBroker, msg)
}

// freshness is whether a broker's answer can be judged against what
// this pass read of the object.
type freshness int

const (
	// fresh: what the pass read is what the API server holds.
	fresh freshness = iota
	// busy: an operation took the object's lock meanwhile; the
	// operations reconciler follows it, resync looks next interval.
	busy
	// stale: the cache had not caught up with the object or its records.
	stale
)

// current reports whether what this pass compared the broker's answer
// with still stands: no operation holds the object's lock, and the API
// server holds the object and its records as the cache gave them to this
// pass. A change that reached the broker after this pass read the cache
// is no drift: the operation that made it holds the lock until its
// record is written, so either the lock or the records show it. It is
// asked only of an answer that differs from what lockstep last applied,
// so a fetch that agrees costs no read past the cache.
func (r *Reconciler[T, S]) current(ctx context.Context, obj T, records []v1alpha1.BrokerOperation) (freshness, error) {
	holder, err := r.Leases.Holder(ctx, journal.KeyOf(r.Kind.Kind(), obj))
	switch {
	case err != nil:
		return stale, err
	case holder != nil:
		return busy, nil
	}
	live := r.Kind.New()
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(obj), live); err != nil {
		return stale, client.IgnoreNotFound(err)
	}
	if live.GetResourceVersion() != obj.GetResourceVersion() {
		return stale, nil
	}
	now, err := journal.Records(ctx, r.APIReader, r.Namespace, obj.GetNamespace(), string(obj.GetUID()))
	if err != nil {
		return stale, fmt.Errorf("reading the operation records of %s: %w", r.named(obj), err)
	}
	if !sameVersions(records, now) {
		return stale, nil
	}
	return fresh, nil
}

// sameVersions reports whether a and b are the same records at the same
// versions.
func sameVersions(a, b []v1alpha1.BrokerOperation) bool {
	if len(a) != len(b) {
		return false
	}
	versions := make(map[string]string, len(a))
	for _, op := range a {
		versions[op.Namespace+"/"+op.Name] = op.ResourceVersion
	}
	for _, op := range b {
		if v, ok := versions[op.Namespace+"/"+op.Name]; !ok || v != op.ResourceVersion {
			return false
		}
	}
	return true
}

// IsGone reports whether conds say that the broker no longer holds the
// object (resync found it so last).
func IsGone(conds []metav1.Condition) bool {
	c := meta.FindStatusCondition(conds, v1alpha1.ConditionInSync)
	return c != nil && c.Status == metav1.ConditionFalse && c.Reason == resync.ReasonGoneAtBroker
}

// fetch reads the object req names from its broker, within the per-broker
// limits, as a call lockstep makes on its own.
func (r *Reconciler[T, S]) fetch(ctx context.Context, req brokercall.Request) (brokercall.Held, error) {
	ctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	done, err := r.Limiter.Acquire(ctx, req.Broker)
	if err != nil {
		return brokercall.Held{}, fmt.Errorf("waiting for a turn at broker %q: %w", req.Broker, err)
	}
	defer done()
	return r.Protocol.Fetch(ctx, req, "")
}

// result counts one fetch and, for drift, reports it as an event.
func (r *Reconciler[T, S]) result(obj T, reason string, event *string) {
	metrics.ResyncResult(string(r.Kind.Kind()), reason)
	if event != nil && r.Recorder != nil {
		r.Recorder.Event(obj, "Warning", reason, *event)
	}
}

// setInSync sets the InSync condition.
func setInSync(conds *[]metav1.Condition, s metav1.ConditionStatus, reason, msg string) {
	resync.SetCondition(conds, v1alpha1.ConditionInSync, s, reason, msg)
}
