package operations

// The operations reconciler follows every BrokerOperation (list, watch),
// prunes them to the newest LOCKSTEP_KEEP_OPERATIONS per object (delete),
// writes their phase and the broker's answer into their status (update,
// patch), and finishes the delete of an object whose deprovision or
// unbind the broker confirmed after admission answered (delete). It lists
// lockstep's locks (Leases, read directly, never cached) to find the
// operations cut short before their record was written, and writes the
// record from the lock.
//
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=list
// +kubebuilder:rbac:groups=lockstep.dev,resources=brokeroperations,verbs=list;watch;delete
// +kubebuilder:rbac:groups=lockstep.dev,resources=brokeroperations/status,verbs=update;patch
// +kubebuilder:rbac:groups=lockstep.dev,resources=serviceinstances;servicebindings,verbs=delete

import (
	"context"
	"fmt"
	"sort"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/catalog"
	"github.com/lockstep-dev/lockstep/internal/credentials"
	"github.com/lockstep-dev/lockstep/internal/journal"
	"github.com/lockstep-dev/lockstep/internal/metrics"
	"github.com/lockstep-dev/lockstep/internal/osbapi"
	"github.com/lockstep-dev/lockstep/internal/osbclient"
	"github.com/lockstep-dev/lockstep/internal/parametersfrom"
)

// persistRecheck is how soon a Succeeded record whose change the API server
// does not hold yet is looked at again: the API server persists an allowed
// change a moment after the webhook answered, without an event on the
// record itself.
const persistRecheck = 100 * time.Millisecond

// Operations takes every BrokerOperation to a final phase. The webhook
// cannot know whether the API server persisted what it allowed; this
// reconciler closes that gap:
//   - InProgress: polled to the end (a bind's credentials then go into its
//     Secret; a finished deprovision or unbind deletes its object);
//   - Succeeded: the object the API server holds matches the operation
//     (uid, spec hash) → Committed, lock released; the object never
//     persisted → Orphaned;
//   - Orphaned: compensated (deprovision, unbind, re-apply the persisted
//     spec, or finish the delete) → Compensated;
//   - Pending for longer than an admission can last, and not named by the
//     object's lock: it never took the lock, so the broker was never
//     called → deleted;
//   - Pending for longer than an admission can last, named by the lock:
//     lockstep stopped before the broker's answer was recorded (the record
//     was restored from the lock, see Locks, or its answer was lost). When
//     the API server holds the change as recorded, it was allowed, so the
//     broker carried it out: Succeeded (answers of allowed operations are
//     written after the reply). Otherwise treated as orphaned where the
//     OSB spec asks for orphan mitigation (provision, bind), failed with
//     an unknown outcome otherwise.
//
// After a restart every non-final operation is picked up again, because
// the records are in the API server.
//
// It never writes the status of an operation's object: each kind's
// controller is the only writer of its objects' status, and reads the
// outcome from the record (its phase, and TargetInSync where the phase
// alone does not tell).
type Operations struct {
	Client client.Client
	// Secrets reads the Secrets of spec.parametersFrom, uncached, when a
	// persisted spec is applied again.
	Secrets  client.Reader
	Catalogs *catalog.Cache
	Leases   *journal.Leases
	Journal  *journal.Journal
	// Poll is the wait between last_operation polls.
	Poll time.Duration
	// Grace is how long after the broker's answer an object that did not
	// persist counts as never persisted.
	Grace time.Duration
	// PendingTimeout is how long a record may stay Pending (the longest
	// admission plus a margin).
	PendingTimeout time.Duration
	// Keep is how many records are kept per object.
	Keep int
	// Retention is how long the final records of an object that no longer
	// exists are kept; 0 keeps them for ever.
	Retention time.Duration
	// Timeout bounds the broker calls of one reconcile.
	Timeout time.Duration
	// Clock tells the records' ages; nil means the real clock.
	Clock clock.PassiveClock
}

// SetupWithManager registers the reconciler.
func (r *Operations) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).For(&v1alpha1.BrokerOperation{}).Named("brokeroperation").Complete(r)
}

// Reconcile implements reconcile.Reconciler.
func (r *Operations) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var op v1alpha1.BrokerOperation
	if err := r.Client.Get(ctx, req.NamespacedName, &op); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	ctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	switch op.Status.Phase {
	case "", v1alpha1.PhasePending:
		return r.pending(ctx, &op)
	case v1alpha1.PhaseInProgress:
		return r.follow(ctx, &op)
	case v1alpha1.PhaseSucceeded:
		return r.commit(ctx, &op)
	case v1alpha1.PhaseOrphaned:
		return r.compensate(ctx, &op)
	default: // Failed, Committed, Compensated
		if err := r.finish(ctx, &op); err != nil {
			return ctrl.Result{}, err
		}
		return r.expire(ctx, &op)
	}
}

func (r *Operations) pending(ctx context.Context, op *v1alpha1.BrokerOperation) (ctrl.Result, error) {
	age := r.clock().Now().Sub(journal.Started(op))
	if age < r.PendingTimeout {
		return ctrl.Result{RequeueAfter: r.PendingTimeout - age}, nil
	}
	held, err := r.Leases.HeldBy(ctx, r.key(op))
	if err != nil {
		return ctrl.Result{}, err
	}
	if held != op.Name {
		// A record is written while the object's lock names it, and the
		// lock stays with it until it is settled (see Leases.live): a
		// Pending record the lock does not name never took the lock, so
		// the broker was never called. No orphan mitigation: the instance
		// or binding with this external id may be the lock holder's.
		log.FromContext(ctx).Info("deleting an operation record that never took the lock; the broker was not called",
			"operation", op.Name, "lockHeldBy", held)
		return ctrl.Result{}, r.Journal.Discard(ctx, op)
	}
	// The record is the lock holder's, written after the broker call or
	// restored from the lock: the broker may have acted on it. Its answer
	// is settled from what the API server holds.
	target, err := r.target(ctx, op)
	if err != nil {
		return ctrl.Result{}, err
	}
	if r.stillAtWork(ctx, op, target) {
		// The broker's answer was never recorded, and the broker is still
		// working on it (or finished a delete the API server does not show
		// yet): follow it like any operation in progress.
		return ctrl.Result{}, r.Journal.SetPhase(ctx, op, target, journal.Answer{Phase: v1alpha1.PhaseInProgress,
			Description: "lockstep stopped before recording the broker's answer; the broker is still at work on it: following the operation"})
	}
	if persistedAsRecorded(op, target) {
		// An allowed answer is written after the reply to the API server,
		// and lockstep stopped before writing it. The API server persists
		// only what every webhook allowed, and lockstep allows only what
		// the broker carried out: the object as the record describes it
		// is the broker's success.
		return ctrl.Result{}, r.Journal.SetPhase(ctx, op, nil, journal.Answer{Phase: v1alpha1.PhaseSucceeded,
			Description: "lockstep stopped before recording the broker's answer; the API server persisted the change, which lockstep allows only after the broker carried it out"})
	}
	if op.Spec.Verb == v1alpha1.VerbUpdate && target != nil && target.GetDeletionTimestamp() == nil &&
		target.GetGeneration() < op.Spec.Generation {
		// The update may have reached the broker, and the API server did
		// not persist it: the persisted spec is applied again, which
		// changes nothing at a broker that never saw the update.
		return ctrl.Result{}, r.Journal.SetPhase(ctx, op, nil, journal.Answer{Phase: v1alpha1.PhaseOrphaned,
			Description: "lockstep stopped before the broker's answer was recorded and the API server did not persist the update; applying the persisted spec again"})
	}
	if (op.Spec.Verb == v1alpha1.VerbProvision || op.Spec.Verb == v1alpha1.VerbBind) && target == nil {
		return ctrl.Result{}, r.Journal.SetPhase(ctx, op, nil, journal.Answer{Phase: v1alpha1.PhaseOrphaned,
			Description: "lockstep stopped before the broker's answer was recorded and the object never persisted; undoing whatever the broker did"})
	}
	return ctrl.Result{}, r.Journal.SetPhase(ctx, op, target, journal.Answer{Phase: v1alpha1.PhaseFailed,
		Description: "lockstep stopped before the broker's answer was recorded; the outcome is unknown"})
}

// stillAtWork asks the broker about a Pending record that holds the lock
// (lockstep stopped before writing the broker's answer): whether the
// operation is still running there, or is a deprovision or unbind the
// broker finished while the object is still there. Any doubt (no answer,
// no client) is false: the record is then settled from what the API
// server holds.
func (r *Operations) stillAtWork(ctx context.Context, op *v1alpha1.BrokerOperation, target client.Object) bool {
	switch op.Spec.Verb {
	case v1alpha1.VerbProvision, v1alpha1.VerbUpdate, v1alpha1.VerbDeprovision, v1alpha1.VerbBind, v1alpha1.VerbUnbind:
	default:
		return false
	}
	c, err := r.brokerClient(ctx, op)
	if err != nil {
		return false
	}
	last, err := r.poll(ctx, c, op)
	if err != nil {
		return false
	}
	if !last.Gone && !last.State.Final() {
		return true
	}
	// Without the operation key, "succeeded" may speak of an earlier
	// operation; only 410 Gone says for sure that a delete happened.
	deleting := op.Spec.Verb == v1alpha1.VerbDeprovision || op.Spec.Verb == v1alpha1.VerbUnbind
	return deleting && last.Gone && target != nil && target.GetDeletionTimestamp() == nil
}

// persistedAsRecorded reports whether the API server holds what op was
// allowed to change: the object it created (same uid), the spec it applied
// at the generation it was allowed at, or the delete it carried out.
func persistedAsRecorded(op *v1alpha1.BrokerOperation, target client.Object) bool {
	switch op.Spec.Verb {
	case v1alpha1.VerbProvision, v1alpha1.VerbBind, v1alpha1.VerbAdopt:
		return target != nil && op.Spec.Target.UID != ""
	case v1alpha1.VerbUpdate:
		return target != nil && target.GetGeneration() == op.Spec.Generation && journal.Applies(op, target)
	case v1alpha1.VerbDeprovision, v1alpha1.VerbUnbind:
		return target == nil || target.GetDeletionTimestamp() != nil
	}
	return false
}

// follow polls an operation that was still running when admission answered.
func (r *Operations) follow(ctx context.Context, op *v1alpha1.BrokerOperation) (ctrl.Result, error) {
	c, err := r.brokerClient(ctx, op)
	if err != nil {
		return ctrl.Result{}, err
	}
	last, err := r.poll(ctx, c, op)
	if err != nil {
		return r.unknown(ctx, op, err)
	}
	deleting := op.Spec.Verb == v1alpha1.VerbDeprovision || op.Spec.Verb == v1alpha1.VerbUnbind
	switch {
	case last.Gone && deleting, last.State == osbapi.StateSucceeded:
	case last.State == osbapi.StateFailed, last.Gone:
		target, _ := r.target(ctx, op)
		answer := journal.Answer{Phase: v1alpha1.PhaseFailed, HTTPStatus: last.HTTPStatus, Description: last.Description}
		if target != nil && op.Spec.Verb != v1alpha1.VerbProvision && op.Spec.Verb != v1alpha1.VerbBind {
			// The broker kept what it held before, which is what the API
			// server holds.
			answer.InSync = &v1alpha1.InSyncNote{Status: metav1.ConditionTrue, Reason: "BrokerRefused",
				Message: fmt.Sprintf("operation %s: the broker answered that the %s failed (%s); it holds the object as persisted", op.Name, op.Spec.Verb, last.Description)}
		}
		return ctrl.Result{}, r.Journal.SetPhase(ctx, op, target, answer)
	default:
		if err := r.Leases.Renew(ctx, r.key(op), op.Name); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{RequeueAfter: r.pollAfter(last)}, nil
	}

	target, err := r.target(ctx, op)
	if err != nil {
		return ctrl.Result{}, err
	}
	switch op.Spec.Verb {
	case v1alpha1.VerbBind:
		if b, ok := target.(*v1alpha1.ServiceBinding); ok {
			got, err := c.GetBinding(ctx, osbclient.RequestMeta{}, osbclient.GetBindingRequest{
				InstanceID: op.Spec.Target.InstanceID, BindingID: op.Spec.Target.ExternalID, ServiceID: op.Spec.ServiceID, PlanID: op.Spec.PlanID})
			if osbclient.IsNotFound(err) {
				return ctrl.Result{RequeueAfter: r.Poll}, nil // not served yet
			}
			if err != nil {
				return ctrl.Result{}, fmt.Errorf("reading the credentials of binding %s/%s: %w", b.Namespace, b.Name, err)
			}
			if err := credentials.Write(ctx, r.Client, b, got.Credentials); err != nil {
				return ctrl.Result{}, err
			}
		}
	case v1alpha1.VerbDeprovision, v1alpha1.VerbUnbind:
		if target != nil && target.GetDeletionTimestamp() == nil {
			if err := r.deleteTarget(ctx, op, target); err != nil {
				return ctrl.Result{}, err
			}
		}
	}
	return ctrl.Result{}, r.Journal.SetPhase(ctx, op, target, journal.Answer{Phase: v1alpha1.PhaseSucceeded, HTTPStatus: last.HTTPStatus, Description: last.Description})
}

// unknown handles a poll that got no answer (connection refused or reset,
// timeout, 5xx, malformed answer): the outcome is unknown, not failed. The
// operation keeps its lock and stays InProgress, the object's InSync
// condition says so, and the broker is asked again later, less often the
// longer the operation lasts.
func (r *Operations) unknown(ctx context.Context, op *v1alpha1.BrokerOperation, err error) (ctrl.Result, error) {
	log.FromContext(ctx).Info("could not learn how a broker operation ended; asking again later", "operation", op.Name, "error", err.Error())
	if err := r.Leases.Renew(ctx, r.key(op), op.Name); err != nil {
		return ctrl.Result{}, err
	}
	note := v1alpha1.InSyncNote{Status: metav1.ConditionUnknown, Reason: "OutcomeUnknown",
		Message: fmt.Sprintf("operation %s: the broker accepted the %s, and lockstep could not learn how it ended (%v); it keeps asking", op.Name, op.Spec.Verb, err)}
	if err := r.Journal.NoteInSync(ctx, op, note); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: r.backoff(op)}, nil
}

// backoff is the wait before asking the broker again about an operation
// whose outcome is unknown: a tenth of the operation's age, at least Poll
// and at most two minutes.
func (r *Operations) backoff(op *v1alpha1.BrokerOperation) time.Duration {
	age := r.clock().Now().Sub(op.CreationTimestamp.Time)
	return min(max(age/10, r.Poll), 2*time.Minute)
}

// commit checks that the API server holds what the broker confirmed.
func (r *Operations) commit(ctx context.Context, op *v1alpha1.BrokerOperation) (ctrl.Result, error) {
	target, err := r.target(ctx, op)
	if err != nil {
		return ctrl.Result{}, err
	}
	persisted := false
	switch op.Spec.Verb {
	case v1alpha1.VerbProvision, v1alpha1.VerbBind, v1alpha1.VerbAdopt:
		persisted = target != nil
	case v1alpha1.VerbUpdate:
		persisted = target == nil || target.GetDeletionTimestamp() != nil ||
			journal.Applies(op, target) || target.GetGeneration() > op.Spec.Generation
	case v1alpha1.VerbDeprovision, v1alpha1.VerbUnbind:
		persisted = target == nil || target.GetDeletionTimestamp() != nil
	}
	if !persisted {
		log.FromContext(ctx).V(1).Info("operation not persisted yet", "operation", op.Name, "specHash", op.Spec.SpecHash,
			"generation", op.Spec.Generation, "targetFound", target != nil)
		// The API server persists an allowed change a moment after the
		// webhook answered; look again soon, until the grace period ends.
		since := r.clock().Now().Sub(completed(op))
		if since < r.Grace {
			return ctrl.Result{RequeueAfter: min(r.Grace-since, persistRecheck)}, nil
		}
		return ctrl.Result{}, r.Journal.SetPhase(ctx, op, nil, journal.Answer{Phase: v1alpha1.PhaseOrphaned,
			Description: fmt.Sprintf("the broker carried out the %s but the API server did not persist it (rejected after lockstep allowed it, or lost); undoing it", op.Spec.Verb)})
	}
	if err := r.Journal.SetPhase(ctx, op, nil, journal.Answer{Phase: v1alpha1.PhaseCommitted}); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, r.finish(ctx, op)
}

// compensate undoes an operation whose object never persisted, so that the
// broker again holds what the API server holds.
func (r *Operations) compensate(ctx context.Context, op *v1alpha1.BrokerOperation) (ctrl.Result, error) {
	c, err := r.brokerClient(ctx, op)
	if err != nil {
		return ctrl.Result{}, err
	}
	target, err := r.target(ctx, op)
	if err != nil {
		return ctrl.Result{}, err
	}
	var what string
	switch op.Spec.Verb {
	case v1alpha1.VerbProvision:
		what = "deprovisioned the orphaned instance"
		err = r.remove(ctx, c, op, osbclient.Removal{InstanceID: op.Spec.Target.ExternalID, ServiceID: op.Spec.ServiceID, PlanID: op.Spec.PlanID})
	case v1alpha1.VerbBind:
		what = "unbound the orphaned binding and removed its Secret"
		err = r.remove(ctx, c, op, osbclient.Removal{InstanceID: op.Spec.Target.InstanceID, BindingID: op.Spec.Target.ExternalID,
			ServiceID: op.Spec.ServiceID, PlanID: op.Spec.PlanID})
		if err == nil {
			err = credentials.DeleteByUID(ctx, r.Client, journal.TargetNamespace(op), op.Spec.Target.UID)
		}
	case v1alpha1.VerbAdopt:
		what = "nothing to undo at the broker (an adoption changes nothing there)"
		if op.Spec.Target.Kind == v1alpha1.KindServiceBinding {
			what = "removed the Secret written for the adopted binding (the broker keeps the binding)"
			err = credentials.DeleteByUID(ctx, r.Client, journal.TargetNamespace(op), op.Spec.Target.UID)
		}
	case v1alpha1.VerbUpdate:
		what = "re-applied the persisted spec at the broker"
		err = r.reapply(ctx, c, op, target)
	case v1alpha1.VerbDeprovision, v1alpha1.VerbUnbind:
		what = "finished the delete the broker had already carried out"
		if target != nil && target.GetDeletionTimestamp() == nil {
			err = r.deleteTarget(ctx, op, target)
		}
	}
	if err != nil {
		note := v1alpha1.InSyncNote{Status: metav1.ConditionFalse, Reason: "CompensationFailed", Message: fmt.Sprintf("operation %s: %v", op.Name, err)}
		if nerr := r.Journal.NoteInSync(ctx, op, note); nerr != nil {
			log.FromContext(ctx).Info("could not note the failed compensation", "operation", op.Name, "error", nerr.Error())
		}
		return ctrl.Result{}, fmt.Errorf("compensating %s/%s: %w", op.Namespace, op.Name, err)
	}
	log.FromContext(ctx).Info("compensated an orphaned broker operation", "operation", op.Name, "what", what)
	if err := r.Journal.SetPhase(ctx, op, target, journal.Answer{Phase: v1alpha1.PhaseCompensated, Description: op.Status.Description + "; " + what,
		InSync: &v1alpha1.InSyncNote{Status: metav1.ConditionTrue, Reason: "Compensated", Message: fmt.Sprintf("operation %s: %s", op.Name, what)}}); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, r.finish(ctx, op)
}

// remove deprovisions or unbinds what an orphaned operation left at the
// broker; still in progress is an error, so that the compensation is
// tried again.
func (r *Operations) remove(ctx context.Context, c *osbclient.Client, op *v1alpha1.BrokerOperation, t osbclient.Removal) error {
	done, err := c.Remove(ctx, osbclient.RequestMeta{}, t, osbclient.PollOptions{MinInterval: r.Poll, MaxInterval: r.Poll * 4})
	if err == nil && !done {
		err = fmt.Errorf("the broker is still removing what operation %s left; trying again", op.Name)
	}
	return err
}

// reapply sends the persisted spec of an instance back to the broker after
// an update that the API server did not persist.
func (r *Operations) reapply(ctx context.Context, c *osbclient.Client, op *v1alpha1.BrokerOperation, target client.Object) error {
	si, ok := target.(*v1alpha1.ServiceInstance)
	if !ok || si.DeletionTimestamp != nil {
		return nil // gone or going: nothing to re-apply
	}
	entry, err := r.Catalogs.Wait(ctx, si.Spec.BrokerName)
	if err != nil {
		return err
	}
	plan, err := entry.Find(si.Spec.ServiceName, si.Spec.PlanName)
	if err != nil {
		return err
	}
	merged, _, err := parametersfrom.Current(ctx, r.Secrets, si.Namespace, si.Spec.Parameters, si.Spec.ParametersFrom)
	if err != nil {
		return err
	}
	params, err := plan.Schemas.UpdateParameters(merged)
	if err != nil {
		return err
	}
	resp, err := c.Update(ctx, osbclient.RequestMeta{RequestID: string(op.UID)}, osbclient.UpdateRequest{
		InstanceID: si.Spec.ExternalID, ServiceID: plan.Service.ID, PlanID: plan.Plan.ID, Parameters: params,
		PreviousValues: &osbapi.PreviousValues{ServiceID: op.Spec.ServiceID, PlanID: op.Spec.PlanID},
	})
	if err != nil || !resp.Async {
		return err
	}
	// last_operation is asked with the plan from before this update: the
	// one the orphaned operation left at the broker.
	last, err := c.PollInstance(ctx, osbclient.RequestMeta{}, osbclient.InstanceLastOperationRequest{InstanceID: si.Spec.ExternalID,
		ServiceID: plan.Service.ID, PlanID: op.Spec.PlanID, Operation: resp.Operation}, osbclient.PollOptions{MinInterval: r.Poll, MaxInterval: r.Poll * 4})
	if err != nil {
		return err
	}
	if last.State != osbapi.StateSucceeded {
		return fmt.Errorf("the broker failed to re-apply the persisted spec: %s", last.Description)
	}
	return nil
}

// finish releases the object's lock and prunes old records.
func (r *Operations) finish(ctx context.Context, op *v1alpha1.BrokerOperation) error {
	if err := r.Leases.Release(ctx, r.key(op), op.Name); err != nil {
		return err
	}
	return r.prune(ctx, op)
}

// prune deletes the oldest final records of the object beyond Keep.
func (r *Operations) prune(ctx context.Context, op *v1alpha1.BrokerOperation) error {
	if r.Keep <= 0 || op.Spec.Target.UID == "" {
		return nil
	}
	var ops v1alpha1.BrokerOperationList
	if err := r.Client.List(ctx, &ops, client.InNamespace(op.Namespace), client.MatchingFields{journal.TargetUIDIndex: string(op.Spec.Target.UID)}); err != nil {
		return err
	}
	if len(ops.Items) <= r.Keep {
		return nil
	}
	sort.Slice(ops.Items, func(i, j int) bool {
		a, b := ops.Items[i].CreationTimestamp, ops.Items[j].CreationTimestamp
		if a.Equal(&b) {
			return ops.Items[i].Name < ops.Items[j].Name
		}
		return a.Before(&b)
	})
	for _, old := range ops.Items[:len(ops.Items)-r.Keep] {
		if !final(old.Status.Phase) {
			continue
		}
		if err := r.Client.Delete(ctx, &old); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("pruning %s/%s: %w", old.Namespace, old.Name, err)
		}
		metrics.OperationPruned("kept")
	}
	return nil
}

// target returns the operation's object when the API server holds it with
// the operation's uid; nil when it does not.
func (r *Operations) target(ctx context.Context, op *v1alpha1.BrokerOperation) (client.Object, error) {
	var obj client.Object = &v1alpha1.ServiceInstance{}
	if op.Spec.Target.Kind == v1alpha1.KindServiceBinding {
		obj = &v1alpha1.ServiceBinding{}
	}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: journal.TargetNamespace(op), Name: op.Spec.Target.Name}, obj)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if op.Spec.Target.UID != "" && obj.GetUID() != op.Spec.Target.UID {
		return nil, nil
	}
	return obj, nil
}

// deleteTarget deletes the operation's object once the broker confirmed its
// deprovision or unbind. The DELETE goes through admission again, so the
// operation lets go of the object's lock first; the broker then answers 410
// Gone, which allows it.
func (r *Operations) deleteTarget(ctx context.Context, op *v1alpha1.BrokerOperation, target client.Object) error {
	if err := r.Leases.Release(ctx, r.key(op), op.Name); err != nil {
		return err
	}
	uid := target.GetUID()
	err := r.Client.Delete(ctx, target, &client.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting %s %s/%s after the broker confirmed the %s: %w", op.Spec.Target.Kind, journal.TargetNamespace(op), op.Spec.Target.Name, op.Spec.Verb, err)
	}
	return nil
}

func (r *Operations) brokerClient(ctx context.Context, op *v1alpha1.BrokerOperation) (*osbclient.Client, error) {
	entry, err := r.Catalogs.Wait(ctx, op.Spec.BrokerName)
	if err != nil {
		return nil, fmt.Errorf("operation %s/%s: %w", op.Namespace, op.Name, err)
	}
	return entry.Client, nil
}

// poll asks the broker once for the operation's last_operation.
func (r *Operations) poll(ctx context.Context, c *osbclient.Client, op *v1alpha1.BrokerOperation) (*osbclient.LastOperation, error) {
	if op.Spec.Target.Kind == v1alpha1.KindServiceBinding {
		return c.BindingLastOperation(ctx, osbclient.RequestMeta{}, osbclient.BindingLastOperationRequest{
			InstanceID: op.Spec.Target.InstanceID, BindingID: op.Spec.Target.ExternalID,
			ServiceID: op.Spec.ServiceID, PlanID: op.Spec.PlanID, Operation: op.Status.OperationKey})
	}
	// After an update, last_operation is asked with the plan from before it.
	planID := op.Spec.PlanID
	if op.Spec.PreviousPlanID != "" {
		planID = op.Spec.PreviousPlanID
	}
	return c.InstanceLastOperation(ctx, osbclient.RequestMeta{}, osbclient.InstanceLastOperationRequest{
		InstanceID: op.Spec.Target.ExternalID, ServiceID: op.Spec.ServiceID, PlanID: planID, Operation: op.Status.OperationKey})
}

func (r *Operations) pollAfter(last *osbclient.LastOperation) time.Duration {
	if last.RetryAfter > r.Poll {
		return last.RetryAfter
	}
	return r.Poll
}

func (r *Operations) key(op *v1alpha1.BrokerOperation) journal.Key {
	return journal.KeyOfRecord(op)
}

func (r *Operations) clock() clock.PassiveClock {
	if r.Clock != nil {
		return r.Clock
	}
	return clock.RealClock{}
}

func completed(op *v1alpha1.BrokerOperation) time.Time {
	if op.Status.CompletionTime != nil {
		return op.Status.CompletionTime.Time
	}
	return op.CreationTimestamp.Time
}

func final(p v1alpha1.OperationPhase) bool {
	return p == v1alpha1.PhaseCommitted || p == v1alpha1.PhaseCompensated || p == v1alpha1.PhaseFailed
}
