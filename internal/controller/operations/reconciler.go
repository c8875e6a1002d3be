package operations

// The operations reconciler follows every BrokerOperation (list, watch),
// prunes them to the newest LOCKSTEP_KEEP_OPERATIONS per object (delete),
// writes their phase and the broker's answer into their status (update,
// patch), and finishes the delete of an object whose deprovision or
// unbind the broker confirmed after admission answered (delete). It lists
// lockstep's locks (Leases, read directly, never cached) to find the
// operations cut short before their record was written, and writes the
// record from the lock; a record whose namespace is gone is moved to
// lockstep's namespace (create, delete).
//
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=LOCKSTEP_NAMESPACE,resources=leases,verbs=list
// +kubebuilder:rbac:groups=lockstep.dev,resources=brokeroperations,verbs=list;watch;delete;patch;update
// +kubebuilder:rbac:groups=lockstep.dev,resources=serviceinstances;servicebindings,verbs=delete

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"time"

	"go.opentelemetry.io/otel/trace"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/osbclient"
	"github.com/lockstep-dev/lockstep/internal/brokercall"
	"github.com/lockstep-dev/lockstep/internal/catalog"
	"github.com/lockstep-dev/lockstep/internal/credentials"
	"github.com/lockstep-dev/lockstep/internal/journal"
	"github.com/lockstep-dev/lockstep/internal/metrics"
	"github.com/lockstep-dev/lockstep/internal/tracing"
)

// persistRecheck is how soon a Succeeded record whose change the API server
// does not hold yet is looked at again: the API server persists an allowed
// change a moment after the webhook answered, without an event on the
// record itself.
const persistRecheck = 100 * time.Millisecond

// Reconciler takes every BrokerOperation to a final phase. The webhook
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
//     OSB spec asks for orphan mitigation (provision, bind, an update the
//     API server did not persist); otherwise the outcome is unknown, and
//     the operation is followed (InProgress) until the broker tells.
//
// After a restart every non-final operation is picked up again, because
// the records are in the API server.
//
// It never writes the status of an operation's object: each kind's
// controller is the only writer of its objects' status, and reads the
// outcome from the record (its phase, and TargetInSync where the phase
// alone does not tell).
type Reconciler struct {
	Client client.Client
	// Secrets reads the Secrets of spec.parametersFrom, uncached, when a
	// persisted spec is applied again.
	Secrets  client.Reader
	Catalogs *catalog.Cache
	Leases   *journal.Leases
	Journal  *journal.Journal
	// Protocol makes the broker calls (lockstep's own, on behalf of the
	// operation's requester): last_operation, fetches, compensations.
	Protocol *brokercall.Protocol
	// Poll is the wait between last_operation polls, and the first wait
	// before a broker is asked again after no answer or a failed
	// compensation (doubling each time up to maxRetryWait).
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
	// Typed tells whether this replica's informers of typed kinds hold an
	// object; nil when there are none to ask. See indexed.
	Typed TypedIndex
	// Workers is how many records are settled at once (at least 1). Each
	// object's lock admits one operation in flight, so records settle
	// independently of each other; settling one is mostly waiting for the
	// API server, so several at once keep up with a burst of admissions.
	Workers int

	retries retries
}

// SetupWithManager registers the reconciler.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).For(&v1alpha1.BrokerOperation{}).Named("brokeroperation").
		WithOptions(controller.Options{MaxConcurrentReconciles: max(r.Workers, 1)}).Complete(r)
}

// Reconcile implements reconcile.Reconciler.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var op v1alpha1.BrokerOperation
	if err := r.Client.Get(ctx, req.NamespacedName, &op); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	ctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	if r.moved(ctx, &op) {
		return ctrl.Result{}, r.Journal.Rehome(ctx, &op)
	}
	recorded := op.DeepCopy()
	res, err := r.settle(ctx, &op)
	if journal.NamespaceGone(err) {
		// The record's namespace is gone and nothing can be written
		// there: it is moved, as it is recorded, to lockstep's namespace
		// and followed there, where the step that failed is taken again.
		log.FromContext(ctx).Info("the namespace of an operation record is gone; moving the record to lockstep's namespace",
			"operation", op.Name, "namespace", op.Namespace)
		return ctrl.Result{}, r.Journal.Rehome(ctx, recorded)
	}
	return res, err
}

// settle takes op one step towards a final phase.
func (r *Reconciler) settle(ctx context.Context, op *v1alpha1.BrokerOperation) (ctrl.Result, error) {
	switch op.Status.Phase {
	case "", v1alpha1.PhasePending:
		return r.pending(ctx, op)
	case v1alpha1.PhaseInProgress:
		return r.follow(ctx, op)
	case v1alpha1.PhaseSucceeded:
		return r.commit(ctx, op)
	case v1alpha1.PhaseOrphaned:
		return r.compensate(ctx, op)
	default: // Failed, Committed, Compensated
		if err := r.finish(ctx, op); err != nil {
			return ctrl.Result{}, err
		}
		return r.expire(ctx, op)
	}
}

// moved reports whether op was moved to lockstep's namespace already (see
// journal.Rehome) and is left where it was only because it could not be
// deleted there: the copy is the one followed.
func (r *Reconciler) moved(ctx context.Context, op *v1alpha1.BrokerOperation) bool {
	home := r.Journal.Namespace
	if home == "" || op.Namespace == home {
		return false
	}
	var copied v1alpha1.BrokerOperation
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: home, Name: op.Name}, &copied); err != nil {
		return false
	}
	return journal.TargetNamespace(&copied) == op.Namespace && copied.Spec.Target.UID == op.Spec.Target.UID
}

func (r *Reconciler) pending(ctx context.Context, op *v1alpha1.BrokerOperation) (ctrl.Result, error) {
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
		return ctrl.Result{}, r.takeUp(ctx, op, target, journal.Answer{Phase: v1alpha1.PhaseInProgress,
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
	// The broker may or may not have carried it out, and the API server
	// does not tell: the outcome is unknown, and followed like that of any
	// request that got no answer (follow asks the broker until it knows,
	// then finishes, fails or undoes it).
	err = errors.New("lockstep stopped before the broker's answer was recorded")
	return ctrl.Result{}, r.takeUp(ctx, op, target, journal.Answer{Phase: v1alpha1.PhaseInProgress,
		Description: "lockstep stopped before the broker's answer was recorded; the outcome is unknown: following the operation",
		InSync:      brokercall.UnknownNote(op.Name, op.Spec.Verb, err)})
}

// takeUp moves a record cut short to InProgress, to be followed. The
// object's lock was not renewed since lockstep stopped, and a Pending
// record is all that kept it: it is renewed first, so that it stays with
// the operation while it is followed.
func (r *Reconciler) takeUp(ctx context.Context, op *v1alpha1.BrokerOperation, target client.Object, a journal.Answer) error {
	if err := r.Leases.Renew(ctx, r.key(op), op.Name); err != nil {
		return err
	}
	return r.Journal.SetPhase(ctx, op, target, a)
}

// stillAtWork asks the broker about a Pending record that holds the lock
// (lockstep stopped before writing the broker's answer): whether the
// operation is still running there, or is a deprovision or unbind the
// broker finished while the object is still there. Any doubt (no answer,
// no client) is false: the record is then settled from what the API
// server holds.
func (r *Reconciler) stillAtWork(ctx context.Context, op *v1alpha1.BrokerOperation, target client.Object) bool {
	switch op.Spec.Verb {
	case v1alpha1.VerbProvision, v1alpha1.VerbUpdate, v1alpha1.VerbDeprovision, v1alpha1.VerbBind, v1alpha1.VerbUnbind:
	default:
		return false
	}
	req, err := r.request(ctx, op, op.Spec.Verb, brokercall.ReasonFollow)
	if err != nil {
		return false
	}
	learned, _, _ := r.Protocol.Learn(ctx, req, op.Status.OperationKey, false, string(op.UID))
	deleting := op.Spec.Verb == v1alpha1.VerbDeprovision || op.Spec.Verb == v1alpha1.VerbUnbind
	return learned == brokercall.StillRunning ||
		deleting && learned == brokercall.CarriedOut && target != nil && target.GetDeletionTimestamp() == nil
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

// follow asks the broker about an operation that was still running when
// admission answered, or whose outcome lockstep could not learn (see
// brokercall.Learn), until it knows: then it records the end, or, when
// the broker cannot tell, settles it the way that leaves both sides equal
// either way.
func (r *Reconciler) follow(ctx context.Context, op *v1alpha1.BrokerOperation) (ctrl.Result, error) {
	ctx, span := followSpan(ctx, op)
	defer span.End()
	req, err := r.request(ctx, op, op.Spec.Verb, brokercall.ReasonFollow)
	if err != nil {
		return ctrl.Result{}, err
	}
	accepted := op.Status.HTTPStatus == http.StatusAccepted
	learned, last, err := r.Protocol.Learn(ctx, req, op.Status.OperationKey, accepted, string(op.UID))
	if learned == brokercall.NoAnswer {
		return r.unknown(ctx, op, err)
	}
	r.retries.forget(op.UID)
	deleting := op.Spec.Verb == v1alpha1.VerbDeprovision || op.Spec.Verb == v1alpha1.VerbUnbind
	switch learned {
	case brokercall.StillRunning:
		if err := r.Leases.Renew(ctx, r.key(op), op.Name); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{RequeueAfter: r.pollAfter(last)}, nil
	case brokercall.NotCarriedOut:
		target, _ := r.target(ctx, op)
		answer := journal.Answer{Phase: v1alpha1.PhaseFailed}
		why := "it still holds the object"
		if last != nil {
			answer.HTTPStatus, answer.Description = last.HTTPStatus, last.Description
			why = fmt.Sprintf("it answered that the %s failed (%s)", op.Spec.Verb, last.Description)
		}
		if target != nil && op.Spec.Verb != v1alpha1.VerbProvision && op.Spec.Verb != v1alpha1.VerbBind {
			// The broker kept what it held before, which is what the API
			// server holds.
			answer.InSync = &v1alpha1.InSyncNote{Status: metav1.ConditionTrue, Reason: "BrokerRefused",
				Message: fmt.Sprintf("operation %s: the broker did not carry out the %s: %s; it holds the object as persisted", op.Name, op.Spec.Verb, why)}
		}
		return ctrl.Result{}, r.Journal.SetPhase(ctx, op, target, answer)
	case brokercall.CannotTell:
		return ctrl.Result{}, r.cannotTell(ctx, op, err)
	}

	// Carried out.
	target, err := r.target(ctx, op)
	if err != nil {
		return ctrl.Result{}, err
	}
	answer := journal.Answer{Phase: v1alpha1.PhaseSucceeded}
	if last != nil {
		answer.HTTPStatus, answer.Description = last.HTTPStatus, last.Description
	}
	if op.Spec.Verb == v1alpha1.VerbBind {
		if b, ok := target.(*v1alpha1.ServiceBinding); ok {
			creds, err := r.Protocol.Credentials(ctx, req, string(op.UID))
			if osbclient.IsNotFound(err) {
				return ctrl.Result{RequeueAfter: r.Poll}, nil // not served yet
			}
			if err != nil {
				return ctrl.Result{}, fmt.Errorf("reading the credentials of binding %s/%s: %w", b.Namespace, b.Name, err)
			}
			if err := credentials.Write(ctx, r.Client, b, req.Offering, creds); err != nil {
				var cannot *credentials.TransformError
				if errors.As(err, &cannot) {
					// Trying again cannot help: the broker's credentials
					// do not fit the binding's transforms. The binding is
					// undone at the broker (orphan mitigation), as a
					// synchronous bind's would be.
					return ctrl.Result{}, r.Journal.SetPhase(ctx, op, nil, journal.Answer{Phase: v1alpha1.PhaseOrphaned,
						Description: fmt.Sprintf("the credentials cannot be stored in Secret %q: %v; orphan mitigation: lockstep removes what the broker created; "+
							"delete the binding and create it again with transforms that fit the broker's credentials", b.Spec.SecretName, cannot)})
				}
				return ctrl.Result{}, err
			}
		}
	}
	if err := r.Journal.SetPhase(ctx, op, target, answer); err != nil {
		return ctrl.Result{}, err
	}
	if deleting && target != nil && target.GetDeletionTimestamp() == nil {
		// The broker confirmed the delete: the object goes too. The record
		// says so first, so that the delete's admission is allowed
		// without asking the broker a second time.
		return ctrl.Result{}, r.deleteTarget(ctx, op, target)
	}
	return ctrl.Result{}, nil
}

// cannotTell settles an operation whose request got no answer and about
// which the broker, asked since, says nothing sure: an update is applied
// again from the persisted spec, which leaves the broker holding what the
// API server holds whether or not it carried the update out; a provision
// or bind is undone (orphan mitigation); of a delete nothing can be
// undone or finished, and the object's InSync says so.
func (r *Reconciler) cannotTell(ctx context.Context, op *v1alpha1.BrokerOperation, err error) error {
	why := "its last_operation does not tell"
	if err != nil {
		why = fmt.Sprintf("its last_operation does not tell (%v)", err)
	}
	switch op.Spec.Verb {
	case v1alpha1.VerbUpdate:
		return r.Journal.SetPhase(ctx, op, nil, journal.Answer{Phase: v1alpha1.PhaseOrphaned,
			Description: fmt.Sprintf("the update got no answer and the broker cannot say whether it carried it out (%s); applying the persisted spec again", why)})
	case v1alpha1.VerbProvision, v1alpha1.VerbBind:
		return r.Journal.SetPhase(ctx, op, nil, journal.Answer{Phase: v1alpha1.PhaseOrphaned,
			Description: fmt.Sprintf("the %s got no answer and the broker cannot say whether it carried it out (%s); undoing whatever it did", op.Spec.Verb, why)})
	}
	target, _ := r.target(ctx, op)
	return r.Journal.SetPhase(ctx, op, target, journal.Answer{Phase: v1alpha1.PhaseFailed,
		Description: fmt.Sprintf("the %s got no answer and the broker cannot say whether it carried it out (%s)", op.Spec.Verb, why),
		InSync: &v1alpha1.InSyncNote{Status: metav1.ConditionUnknown, Reason: "OutcomeUnknown",
			Message: fmt.Sprintf("operation %s: the %s got no answer, and the broker cannot say whether it carried it out (%s, and it does not let lockstep read the object); "+
				"delete the object again: a broker answers 410 Gone for what it no longer holds", op.Name, op.Spec.Verb, why)}})
}

// unknown handles a question the broker did not answer (connection
// refused or reset, timeout, 5xx, malformed answer): the outcome is still
// unknown, not failed. The operation keeps its lock and stays InProgress,
// the object's InSync condition says so, and the broker is asked again,
// waiting twice as long each time (retryAfter).
func (r *Reconciler) unknown(ctx context.Context, op *v1alpha1.BrokerOperation, err error) (ctrl.Result, error) {
	log.FromContext(ctx).Info("could not learn how a broker operation ended; asking again later", "operation", op.Name, "error", err.Error())
	if err := r.Leases.Renew(ctx, r.key(op), op.Name); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.Journal.NoteInSync(ctx, op, *brokercall.UnknownNote(op.Name, op.Spec.Verb, err)); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: r.retryAfter(op)}, nil
}

// commit checks that the API server holds what the broker confirmed.
func (r *Reconciler) commit(ctx context.Context, op *v1alpha1.BrokerOperation) (ctrl.Result, error) {
	target, err := r.target(ctx, op)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !journal.Persisted(op, target) {
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
	if !r.indexed(op) && r.clock().Now().Sub(completed(op)) < r.Grace {
		log.FromContext(ctx).V(1).Info("operation persisted, not yet in this replica's informer of its kind", "operation", op.Name)
		return ctrl.Result{RequeueAfter: persistRecheck}, nil
	}
	if err := r.Journal.SetPhase(ctx, op, nil, journal.Answer{Phase: v1alpha1.PhaseCommitted}); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, r.finish(ctx, op)
}

// compensate undoes an operation whose object never persisted, so that the
// broker again holds what the API server holds. A compensation the broker
// refuses or does not answer is tried again, waiting twice as long each
// time (a broker busy with the binding's bind answers 422
// ConcurrencyError until it is done).
func (r *Reconciler) compensate(ctx context.Context, op *v1alpha1.BrokerOperation) (ctrl.Result, error) {
	ctx, span := followSpan(ctx, op)
	defer span.End()
	target, err := r.target(ctx, op)
	if err != nil {
		return ctrl.Result{}, err
	}
	var what string
	switch op.Spec.Verb {
	case v1alpha1.VerbProvision:
		what = "deprovisioned the orphaned instance"
		err = r.remove(ctx, op, v1alpha1.VerbDeprovision)
	case v1alpha1.VerbBind:
		what = "unbound the orphaned binding and removed its Secret"
		err = r.remove(ctx, op, v1alpha1.VerbUnbind)
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
		err = r.reapply(ctx, op, target)
		if osbclient.IsNotFound(err) || osbclient.IsGone(err) {
			// The broker no longer holds the instance (a delete whose
			// answer was lost carried it out): there is nothing to put
			// the spec back on. Resync reports the instance gone and says
			// what to do.
			what, err = "nothing re-applied: the broker no longer holds the instance", nil
		}
		if err != nil && target != nil && r.namespaceGone(ctx, target.GetNamespace()) {
			// The instance is left in a namespace that no longer exists
			// (removed while lockstep's kinds were not served): nobody
			// can see or change it, and what its spec refers to (its
			// Secrets) went with the namespace, so it can never be
			// re-applied.
			what, err = "nothing re-applied: the instance's namespace no longer exists, so nobody can see or change it", nil
		}
	case v1alpha1.VerbDeprovision, v1alpha1.VerbUnbind:
		what = "finished the delete the broker had already carried out"
		if target != nil && target.GetDeletionTimestamp() == nil {
			err = r.deleteTarget(ctx, op, target)
		}
	}
	if err != nil {
		log.FromContext(ctx).Info("compensation not done; trying again later", "operation", op.Name, "error", err.Error())
		note := v1alpha1.InSyncNote{Status: metav1.ConditionFalse, Reason: "CompensationFailed", Message: fmt.Sprintf("operation %s: %v; lockstep tries again", op.Name, err)}
		if nerr := r.Journal.NoteInSync(ctx, op, note); nerr != nil {
			log.FromContext(ctx).Info("could not note the failed compensation", "operation", op.Name, "error", nerr.Error())
		}
		return ctrl.Result{RequeueAfter: r.retryAfter(op)}, nil
	}
	r.retries.forget(op.UID)
	log.FromContext(ctx).Info("compensated an orphaned broker operation", "operation", op.Name, "what", what)
	if err := r.Journal.SetPhase(ctx, op, target, journal.Answer{Phase: v1alpha1.PhaseCompensated, Description: op.Status.Description + "; " + what,
		InSync: &v1alpha1.InSyncNote{Status: metav1.ConditionTrue, Reason: "Compensated", Message: fmt.Sprintf("operation %s: %s", op.Name, what)}}); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, r.finish(ctx, op)
}

// remove deprovisions or unbinds what an orphaned operation left at the
// broker (orphan mitigation), on behalf of the operation's requester.
func (r *Reconciler) remove(ctx context.Context, op *v1alpha1.BrokerOperation, verb v1alpha1.Verb) error {
	req, err := r.request(ctx, op, verb, brokercall.ReasonOrphanMitigation)
	if err != nil {
		return err
	}
	return compensated(r.Protocol.Send(ctx, req, string(op.UID)), fmt.Sprintf("remove what operation %s left", op.Name))
}

// reapply sends the persisted spec of an instance back to the broker after
// an update that the API server did not persist, as an update on behalf
// of the operation's requester (brokercall.Reapply), with the instance's
// context. When the broker refuses it, and its instance
// can be read, a 404 or 410 on reading it says that the broker no longer
// holds the instance. The orphaned update may have left the broker on its plan: that
// one is sent as the previous plan.
func (r *Reconciler) reapply(ctx context.Context, op *v1alpha1.BrokerOperation, target client.Object) error {
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
	req, err := brokercall.Reapply(ctx, r.Secrets, si, entry, plan, op.Spec.PlanID, r.Protocol.Lockstep(op.Spec.Requester.Username, brokercall.ReasonCompensation))
	if err != nil {
		return err
	}
	res := r.Protocol.Send(ctx, req, string(op.UID))
	if res.Verdict == brokercall.Refused && req.Retrievable && !osbclient.IsNotFound(res.Err) && !osbclient.IsGone(res.Err) {
		// A broker may refuse an update of an instance it no longer holds
		// with another status than 404 (400 "does not exist"): its
		// instance tells.
		if _, err := r.Protocol.Fetch(ctx, req, string(op.UID)); osbclient.IsNotFound(err) || osbclient.IsGone(err) {
			return err
		}
	}
	return compensated(res, "apply the persisted spec again")
}

// namespaceGone reports whether the namespace name no longer exists; any
// doubt is false. It reads the namespace's metadata only, as admission
// does, from the same cache.
func (r *Reconciler) namespaceGone(ctx context.Context, name string) bool {
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	err := r.Client.Get(ctx, client.ObjectKey{Name: name}, ns)
	return apierrors.IsNotFound(err)
}

// compensated is what a compensation's broker call to do what came to:
// nothing once done; the broker still at work, a refusal or no answer are
// errors, so that the compensation is tried again.
func compensated(res brokercall.Result, what string) error {
	switch res.Verdict {
	case brokercall.Done:
		return nil
	case brokercall.Running:
		return fmt.Errorf("the broker is still at work to %s", what)
	}
	return fmt.Errorf("the broker did not %s: %w", what, res.Err)
}

// finish releases the object's lock and prunes old records.
func (r *Reconciler) finish(ctx context.Context, op *v1alpha1.BrokerOperation) error {
	r.retries.forget(op.UID)
	if err := r.Leases.Release(ctx, r.key(op), op.Name); err != nil {
		return err
	}
	return r.prune(ctx, op)
}

// prune deletes the oldest final records of the object beyond Keep.
func (r *Reconciler) prune(ctx context.Context, op *v1alpha1.BrokerOperation) error {
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
func (r *Reconciler) target(ctx context.Context, op *v1alpha1.BrokerOperation) (client.Object, error) {
	return journal.Target(ctx, r.Client, op)
}

// deleteTarget deletes the operation's object once the broker confirmed its
// deprovision or unbind. The DELETE goes through admission again, which
// finds the object's lock held by this operation, recorded as carried out
// (or orphaned after a delete the broker carried out), and allows it
// without a second call to the broker.
func (r *Reconciler) deleteTarget(ctx context.Context, op *v1alpha1.BrokerOperation, target client.Object) error {
	uid := target.GetUID()
	if si, ok := target.(*v1alpha1.ServiceInstance); ok && v1alpha1.Typed(si) {
		// The model of a typed object: the typed object is deleted.
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(si.GroupVersionKind())
		u.SetNamespace(si.Namespace)
		u.SetName(si.Name)
		target = u
	}
	err := r.Client.Delete(ctx, target, &client.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting %s %s/%s after the broker confirmed the %s: %w", op.Spec.Target.Kind, journal.TargetNamespace(op), op.Spec.Target.Name, op.Spec.Verb, err)
	}
	return nil
}

// request is the broker call verb about the operation op's object, made
// by lockstep on behalf of op's requester, for reason.
func (r *Reconciler) request(ctx context.Context, op *v1alpha1.BrokerOperation, verb v1alpha1.Verb, reason string) (brokercall.Request, error) {
	entry, err := r.Catalogs.Wait(ctx, op.Spec.BrokerName)
	if err != nil {
		return brokercall.Request{}, fmt.Errorf("operation %s/%s: %w", op.Namespace, op.Name, err)
	}
	return brokercall.ForRecord(verb, op, entry, r.Protocol.Lockstep(op.Spec.Requester.Username, reason)), nil
}

func (r *Reconciler) pollAfter(last *osbclient.LastOperation) time.Duration {
	if last.RetryAfter > r.Poll {
		return last.RetryAfter
	}
	return r.Poll
}

func (r *Reconciler) key(op *v1alpha1.BrokerOperation) journal.Key {
	return journal.KeyOfRecord(op)
}

func (r *Reconciler) clock() clock.PassiveClock {
	if r.Clock != nil {
		return r.Clock
	}
	return clock.RealClock{}
}

// followSpan starts the lockstep.follow span of a step that asks op's
// broker after admission (how an operation ended, an undo), in the trace
// of the admission that started op.
func followSpan(ctx context.Context, op *v1alpha1.BrokerOperation) (context.Context, trace.Span) {
	ctx, span := tracing.Start(tracing.WithTraceparent(ctx, op.Annotations[tracing.AnnotationTraceparent]), tracing.SpanFollow)
	if span.IsRecording() {
		span.SetAttributes(tracing.AttrRecord.String(op.Name), tracing.AttrVerb.String(string(op.Spec.Verb)),
			tracing.AttrPhase.String(string(op.Status.Phase)), tracing.AttrBroker.String(op.Spec.BrokerName))
	}
	return ctx, span
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
