package binding

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
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
	"github.com/lockstep-dev/lockstep/internal/credentials"
	"github.com/lockstep-dev/lockstep/internal/journal"
)

const kind = v1alpha1.KindServiceBinding

// Reconciler is the controller of ServiceBindings.
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
	// Protocol makes the finalizer's unbinds, each journaled under the
	// object's lock. Its Carrier never waits for a lock.
	Protocol *brokercall.Protocol
	Recorder record.EventRecorder
	// Timeout bounds the broker calls of one pass.
	Timeout time.Duration
	// ResyncInterval is the time between two fetches of one binding from
	// its broker; 0 turns resync off.
	ResyncInterval time.Duration
	Limiter        *resync.Limiter
	// Workers is how many bindings are reconciled at once (at least 1).
	Workers int
	Clock   clock.PassiveClock

	schedule resync.Schedule
}

// SetupWithManager registers the controller; it watches the bindings, the
// Secrets lockstep wrote for them, and their BrokerOperations.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).For(&v1alpha1.ServiceBinding{}).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(bindingOfSecret)).
		Watches(&v1alpha1.BrokerOperation{}, handler.EnqueueRequestsFromMapFunc(targetOf)).
		WithOptions(runtimecontroller.Options{MaxConcurrentReconciles: max(r.Workers, 1)}).
		Named("servicebinding").Complete(r)
}

// Reconcile finishes the delete of a binding being deleted; for any other,
// it gives the binding's Secret its owner, and writes into the status what
// the journal and the Secret say and, when due, what the broker holds.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var b v1alpha1.ServiceBinding
	if err := r.Client.Get(ctx, req.NamespacedName, &b); err != nil {
		if apierrors.IsNotFound(err) {
			r.schedule.Forget(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	if b.DeletionTimestamp != nil {
		return r.finalize(ctx, &b)
	}
	if err := credentials.Adopt(ctx, r.Client, &b); err != nil {
		return ctrl.Result{}, err
	}
	status := b.Status.DeepCopy()
	if err := r.fromJournal(ctx, &b, status); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.ready(ctx, &b, status); err != nil {
		return ctrl.Result{}, err
	}
	var res ctrl.Result
	if r.ResyncInterval > 0 {
		var err error
		if res, err = r.resync(ctx, &b, status); err != nil {
			return ctrl.Result{}, err
		}
	}
	return res, r.write(ctx, &b, status)
}

// write patches the status when it changed (see brokered.PatchStatus).
func (r *Reconciler) write(ctx context.Context, b *v1alpha1.ServiceBinding, status *v1alpha1.ServiceBindingStatus) error {
	return brokered.PatchStatus(ctx, r.Client, kind, b, &b.Status, status)
}

// journalReaders are where the finalizer reads the journal.
func (r *Reconciler) journalReaders() brokered.JournalReaders {
	return brokered.JournalReaders{Client: r.Client, APIReader: r.APIReader, Leases: r.Leases, Namespace: r.Namespace}
}

// bindingOfSecret maps a Secret lockstep wrote to its binding.
func bindingOfSecret(_ context.Context, o client.Object) []reconcile.Request {
	name := credentials.BindingName(o)
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
}

// targetOf maps a BrokerOperation to its binding.
func targetOf(_ context.Context, o client.Object) []reconcile.Request {
	op, ok := o.(*v1alpha1.BrokerOperation)
	if !ok || op.Spec.Target.Kind != kind {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: journal.TargetNamespace(op), Name: op.Spec.Target.Name}}}
}

func (r *Reconciler) clock() clock.PassiveClock {
	if r.Clock != nil {
		return r.Clock
	}
	return clock.RealClock{}
}
