package brokered

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	runtimecontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/brokercall"
	"github.com/lockstep-dev/lockstep/internal/catalog"
	"github.com/lockstep-dev/lockstep/internal/controller/resync"
	"github.com/lockstep-dev/lockstep/internal/journal"
)

// Config is what every Reconciler is given.
type Config struct {
	Client client.Client
	// APIReader reads past the cache: the journal, before the finalizer
	// concludes that a delete bypassed admission, and the Secrets of
	// spec.parametersFrom.
	APIReader client.Reader
	// Namespace is lockstep's namespace (records of deletes in a namespace
	// being deleted live there).
	Namespace string
	Catalogs  *catalog.Cache
	Leases    *journal.Leases
	// Protocol makes lockstep's own broker calls: resync's fetches, drift
	// corrections and the finalizer's removals, each change journaled
	// under the object's lock. Its Carrier never waits for a lock:
	// another operation in flight is the operations reconciler's to
	// follow.
	Protocol *brokercall.Protocol
	Recorder record.EventRecorder
	// Timeout bounds the broker calls of one pass.
	Timeout time.Duration
	// ResyncInterval is the time between two fetches of one object from
	// its broker (jittered to 90-100% of it); 0 turns resync off.
	ResyncInterval time.Duration
	// Limiter bounds resync's fetches per broker.
	Limiter *resync.Limiter
	// Workers is how many objects are reconciled at once (at least 1), so
	// that resync's fetches at one slow broker do not hold up the others.
	Workers int
	Clock   clock.PassiveClock
}

// Reconciler is the controller of one kind of broker-backed object, and
// the only writer of its status.
type Reconciler[T client.Object, S any] struct {
	Config
	Kind Kind[T, S]

	schedule resync.Schedule
	// finalized remembers the objects whose finalizer this process
	// removed: a reconcile queued before the object went (by its
	// record's writes) finds it in the cache a moment longer, and has
	// nothing left to do.
	finalized journal.Recent
	// overwritten remembers the versions of objects this process wrote a
	// status over: a reconcile queued by its own writes (a binding's
	// Secret adopted, a record answered) may find the object in the cache
	// at such a version, before the status it wrote got there. It has
	// nothing to write that this process did not write already, and a
	// write over that version would be refused as a conflict; the watch
	// event of the status written queues the object again.
	overwritten journal.Recent
}

// SetupWithManager registers the controller; it watches the objects, their
// BrokerOperations, and what the kind adds.
func (r *Reconciler[T, S]) SetupWithManager(mgr ctrl.Manager) error {
	b := ctrl.NewControllerManagedBy(mgr).For(r.Kind.New()).
		Watches(&v1alpha1.BrokerOperation{}, handler.EnqueueRequestsFromMapFunc(r.TargetOf))
	return r.Kind.Watch(b).
		WithOptions(runtimecontroller.Options{MaxConcurrentReconciles: max(r.Workers, 1)}).
		Named(strings.ToLower(string(r.Kind.Kind()))).Complete(r)
}

// TargetOf maps a BrokerOperation to its object, when the object is of
// the Reconciler's kind: its kind and group (a typed kind's objects are
// read into objects whose TypeMeta names the group; lockstep.dev's are
// named by an empty one).
func (r *Reconciler[T, S]) TargetOf(_ context.Context, o client.Object) []reconcile.Request {
	op, ok := o.(*v1alpha1.BrokerOperation)
	if !ok || op.Spec.Target.Kind != r.Kind.Kind() || op.Spec.Target.APIGroup != r.Kind.New().GetObjectKind().GroupVersionKind().Group {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: journal.TargetNamespace(op), Name: op.Spec.Target.Name}}}
}

// Reconcile finishes the delete of an object being deleted; for any other,
// it writes into the status what the journal says, when due what the
// broker holds, and what the kind observes besides.
func (r *Reconciler[T, S]) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	obj := r.Kind.New()
	if err := r.Client.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			r.schedule.Forget(req.NamespacedName)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	if obj.GetDeletionTimestamp() != nil {
		if r.finalized.Has(string(obj.GetUID())) {
			return reconcile.Result{}, nil
		}
		res, err := r.finalize(ctx, obj)
		if err == nil && !controllerutil.ContainsFinalizer(obj, v1alpha1.Finalizer) {
			r.finalized.Remember(string(obj.GetUID()))
		}
		return res, err
	}
	if r.overwritten.Has(version(obj)) {
		return reconcile.Result{}, nil
	}
	if err := RestoreFinalizer(ctx, r.Client, obj); err != nil {
		return reconcile.Result{}, fmt.Errorf("restoring lockstep's finalizer on %s: %w", r.named(obj), err)
	}
	status := r.Kind.Status(obj.DeepCopyObject().(T))
	records, err := journal.CachedRecords(ctx, r.Client, r.Namespace, obj.GetNamespace(), string(obj.GetUID()))
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("reading the operation records of %s: %w", r.named(obj), err)
	}
	if waiting, after := awaitingAnswer(obj, records, time.Now()); waiting {
		return reconcile.Result{RequeueAfter: after}, nil
	}
	r.Kind.FromJournal(obj, status, records)
	var res reconcile.Result
	if r.ResyncInterval > 0 {
		if res, err = r.resync(ctx, obj, status, records); err != nil {
			return reconcile.Result{}, err
		}
	}
	if err := r.Kind.Observe(ctx, obj, status); err != nil {
		return reconcile.Result{}, err
	}
	from := version(obj)
	wrote, err := PatchStatus(ctx, r.Client, r.Kind.Kind(), obj, r.Kind.Status(obj), status)
	if err != nil {
		return reconcile.Result{}, err
	}
	if wrote {
		r.overwritten.Remember(from)
	}
	return res, nil
}

// version names one version of an object: its uid and resourceVersion.
func version(obj client.Object) string {
	return string(obj.GetUID()) + "@" + obj.GetResourceVersion()
}

// answerWait is how long a new object's status waits for the broker's
// answer to reach its record: admission writes the record a moment after
// its reply, and the object's first status then says it at once, in one
// write, instead of a first write without it and a second with it.
const answerWait = 5 * time.Second

// awaitingAnswer reports whether obj, created less than answerWait ago,
// has no record with the broker's answer yet, and when to look again (its
// record's write queues it before that). An object created past
// admission never gets one, and has its status written after the wait.
// A success not committed yet waits too: admission commits it once it sees
// the object persisted, or, when it could not wait that long (a burst),
// the operations reconciler does a moment later, and the status written
// before that would be written again.
func awaitingAnswer(obj client.Object, records []v1alpha1.BrokerOperation, now time.Time) (bool, time.Duration) {
	for _, op := range records {
		if op.Status.Phase != "" && op.Status.Phase != v1alpha1.PhaseSucceeded {
			return false, 0
		}
	}
	age := now.Sub(obj.GetCreationTimestamp().Time)
	if age < 0 || age >= answerWait {
		return false, 0
	}
	return true, answerWait - age
}

// target resolves where obj lives at its broker. wait says to wait for
// the broker's catalog (the finalizer); without it, ok is false when the
// catalog is not loaded, or the object's plan not in it (resync: admission
// says so on the next change).
func (r *Reconciler[T, S]) target(ctx context.Context, obj T, wait bool) (_ Target, ok bool, _ error) {
	si, err := r.Kind.Instance(ctx, obj)
	if err != nil {
		return Target{}, false, err
	}
	var entry *catalog.Entry
	if wait {
		if entry, err = r.Catalogs.Wait(ctx, si.Spec.BrokerName); err != nil {
			return Target{}, false, err
		}
	} else if entry, ok = r.Catalogs.Get(si.Spec.BrokerName); !ok {
		return Target{}, false, nil
	}
	plan, err := entry.Find(si.Spec.ServiceName, si.Spec.PlanName)
	if err != nil {
		if wait {
			return Target{}, false, err
		}
		return Target{}, false, nil
	}
	return Target{Instance: si, Entry: entry, Plan: plan}, true, nil
}

// named is how messages name obj: "instance team/db".
func (r *Reconciler[T, S]) named(obj client.Object) string {
	return fmt.Sprintf("%s %s/%s", word(r.Kind.Kind()), obj.GetNamespace(), obj.GetName())
}

func (r *Reconciler[T, S]) clock() clock.PassiveClock {
	if r.Clock != nil {
		return r.Clock
	}
	return clock.RealClock{}
}
