package marketplace

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/catalog"
	"github.com/lockstep-dev/lockstep/internal/marketplace"
)

// staleRetry is how soon a pass runs again after it found the cache behind.
const staleRetry = time.Second

// Reconciler writes the marketplace of one ServiceBroker per reconcile.
type Reconciler struct {
	// Client reads ServiceBrokers, ServiceOfferings, ServicePlans and
	// ServiceInstances (cached) and writes the marketplace kinds.
	Client client.Client
	// Catalogs is the replica's catalog cache, filled by the servicebroker
	// controller.
	Catalogs *catalog.Cache
}

// SetupWithManager registers the controller. It needs the lead (the
// default): one replica writes the marketplace. It runs for every change
// of a ServiceBroker (the servicebroker controller writes its status after
// every catalog load), when a ServiceInstance goes or changes plan (a
// removed plan may have lost its last instance), and, for every other
// broker that activates typed kinds, when a ServiceOffering's typed kind
// changes or an offering with one goes (a name one of its services wants
// may have been taken or freed).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).Named("marketplace").
		For(&v1alpha1.ServiceBroker{}).
		Watches(&v1alpha1.ServiceInstance{}, handler.EnqueueRequestsFromMapFunc(brokerOf),
			builder.WithPredicates(predicate.Funcs{
				CreateFunc:  func(event.CreateEvent) bool { return false },
				GenericFunc: func(event.GenericEvent) bool { return false },
				DeleteFunc:  func(event.DeleteEvent) bool { return true },
				UpdateFunc: func(e event.UpdateEvent) bool {
					old, oldOK := e.ObjectOld.(*v1alpha1.ServiceInstance)
					cur, curOK := e.ObjectNew.(*v1alpha1.ServiceInstance)
					return !oldOK || !curOK || old.Spec.PlanName != cur.Spec.PlanName || old.Spec.ServiceName != cur.Spec.ServiceName
				},
			})).
		Watches(&v1alpha1.ServiceOffering{}, handler.EnqueueRequestsFromMapFunc(r.otherTypedKindBrokers),
			builder.WithPredicates(predicate.Funcs{
				CreateFunc:  func(event.CreateEvent) bool { return false },
				GenericFunc: func(event.GenericEvent) bool { return false },
				DeleteFunc:  func(e event.DeleteEvent) bool { return typedKindShown(e.Object) != "" },
				UpdateFunc:  func(e event.UpdateEvent) bool { return typedKindShown(e.ObjectOld) != typedKindShown(e.ObjectNew) },
			})).
		Complete(r)
}

// brokerOf is the request for the ServiceBroker of an instance.
func brokerOf(_ context.Context, obj client.Object) []reconcile.Request {
	si, ok := obj.(*v1alpha1.ServiceInstance)
	if !ok || si.Spec.BrokerName == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: si.Spec.BrokerName}}}
}

// Reconcile brings the broker's ServiceOfferings and ServicePlans in line
// with its cached catalog. Without a catalog (not loaded yet, or the
// broker unreachable since start) it changes nothing; the next catalog load
// writes the broker's status and so starts it again.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var sb v1alpha1.ServiceBroker
	if err := r.Client.Get(ctx, req.NamespacedName, &sb); err != nil {
		// A deleted broker's marketplace goes with it (garbage collector).
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if sb.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	entry, ok := r.Catalogs.Get(sb.Name)
	if !ok {
		return ctrl.Result{}, nil
	}
	s := &sync{client: r.Client, broker: &sb, entry: entry}
	err := s.run(ctx, marketplace.Desired(&sb, entry))
	if errors.Is(err, errStale) {
		return ctrl.Result{RequeueAfter: staleRetry}, nil
	}
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("writing the marketplace of ServiceBroker %q (%d writes done): %w", sb.Name, s.writes, err)
	}
	if s.writes > 0 {
		log.FromContext(ctx).Info("marketplace written", "broker", sb.Name, "writes", s.writes)
	}
	return ctrl.Result{}, nil
}

// ignoreGone treats an object that is already gone as deleted.
func ignoreGone(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
