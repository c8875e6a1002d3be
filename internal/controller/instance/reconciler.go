package instance

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	runtimecontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/brokercall"
	"github.com/lockstep-dev/lockstep/internal/catalog"
	"github.com/lockstep-dev/lockstep/internal/controller/brokered"
	"github.com/lockstep-dev/lockstep/internal/controller/resync"
	"github.com/lockstep-dev/lockstep/internal/journal"
)

const kind = v1alpha1.KindServiceInstance

// Reconciler is the controller of ServiceInstances.
type Reconciler struct {
	Client client.Client
	// APIReader reads the journal past the cache before the finalizer
	// concludes that a delete bypassed admission.
	APIReader client.Reader
	// Namespace is lockstep's namespace (records of deletes in a namespace
	// being deleted live there).
	Namespace string
	Catalogs  *catalog.Cache
	Leases    *journal.Leases
	// Protocol makes lockstep's own broker calls for instances: drift
	// corrections and the finalizer's deprovisions, each journaled under
	// the object's lock. Its Carrier never waits for a lock: another
	// operation in flight is the operations reconciler's to follow.
	Protocol *brokercall.Protocol
	Recorder record.EventRecorder
	// Timeout bounds the broker calls of one pass.
	Timeout time.Duration
	// ResyncInterval is the time between two fetches of one instance from
	// its broker (jittered to 90-100% of it); 0 turns resync off.
	ResyncInterval time.Duration
	// Limiter bounds resync's fetches per broker.
	Limiter *resync.Limiter
	// Workers is how many objects are reconciled at once (at least 1), so
	// that resync's fetches at one slow broker do not hold up the others.
	Workers int
	Clock   clock.PassiveClock

	schedule resync.Schedule
}

// SetupWithManager registers the controller; it watches the instances and
// their BrokerOperations.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).For(&v1alpha1.ServiceInstance{}).
		Watches(&v1alpha1.BrokerOperation{}, handler.EnqueueRequestsFromMapFunc(targetOf)).
		WithOptions(runtimecontroller.Options{MaxConcurrentReconciles: max(r.Workers, 1)}).
		Named("serviceinstance").Complete(r)
}

// targetOf maps a BrokerOperation to its instance.
func targetOf(_ context.Context, o client.Object) []reconcile.Request {
	op, ok := o.(*v1alpha1.BrokerOperation)
	if !ok || op.Spec.Target.Kind != kind {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: journal.TargetNamespace(op), Name: op.Spec.Target.Name}}}
}

// Reconcile finishes the delete of an instance being deleted; for any
// other, it writes into the status what the journal says and, when due,
// what the broker holds.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var si v1alpha1.ServiceInstance
	if err := r.Client.Get(ctx, req.NamespacedName, &si); err != nil {
		if apierrors.IsNotFound(err) {
			r.schedule.Forget(req.NamespacedName)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	if si.DeletionTimestamp != nil {
		return r.finalize(ctx, &si)
	}
	status := si.Status.DeepCopy()
	if err := r.fromJournal(ctx, &si, status); err != nil {
		return reconcile.Result{}, err
	}
	var res reconcile.Result
	if r.ResyncInterval > 0 {
		var err error
		if res, err = r.resync(ctx, &si, status); err != nil {
			return reconcile.Result{}, err
		}
	}
	return res, r.write(ctx, &si, status)
}

// write patches the status when it changed (see brokered.PatchStatus).
func (r *Reconciler) write(ctx context.Context, si *v1alpha1.ServiceInstance, status *v1alpha1.ServiceInstanceStatus) error {
	return brokered.PatchStatus(ctx, r.Client, kind, si, &si.Status, status)
}

// journalReaders are where the finalizer reads the journal.
func (r *Reconciler) journalReaders() brokered.JournalReaders {
	return brokered.JournalReaders{Client: r.Client, APIReader: r.APIReader, Leases: r.Leases, Namespace: r.Namespace}
}

func (r *Reconciler) clock() clock.PassiveClock {
	if r.Clock != nil {
		return r.Clock
	}
	return clock.RealClock{}
}
