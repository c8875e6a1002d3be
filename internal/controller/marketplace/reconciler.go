package marketplace

import (
	"context"
	"errors"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
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
	"github.com/lockstep-dev/lockstep/internal/typed/render"
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
	// Reader reads past the cache: a CRD lockstep did not apply.
	Reader client.Reader
	// Kinds lists the objects of typed kinds.
	Kinds dynamic.Interface
	// Discovery lists every resource the API server serves, whose names no
	// new typed kind takes; nil checks none.
	Discovery discovery.DiscoveryInterface
	// RetireGrace is how long the CRD of a typed kind being retired stays
	// marked retiring (creates of the kind refused) before its objects are
	// listed for the last time and it is deleted: at least how long an
	// admitted create may take to be stored or given up (the validating
	// webhook's budget and the commit grace).
	RetireGrace time.Duration
}

// retryAfter is how soon a pass runs again after it could not settle a
// typed kind (the offering says why), or while objects keep the CRD of a
// kind whose ServiceBroker is gone.
const retryAfter = 30 * time.Second

// SetupWithManager registers the controller. It needs the lead (the
// default): one replica writes the marketplace. It runs for every change
// of a ServiceBroker (the servicebroker controller writes its status after
// every catalog load), when a ServiceInstance of a removed plan goes or
// changes plan (the plan may have lost its last instance; planMayGo), and,
// for every other broker that activates typed kinds, when a
// ServiceOffering's typed kind changes or an offering with one goes (a
// name one of its services wants may have been taken or freed), and when a
// typed kind's CRD changes (it became established, or was changed or
// deleted behind lockstep's back).
//
// A second controller writes a typed kind's status as soon as its CRD is
// established (established.go).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := r.setupEstablished(mgr); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).Named("marketplace").
		For(&v1alpha1.ServiceBroker{}).
		Watches(&v1alpha1.ServiceInstance{}, handler.EnqueueRequestsFromMapFunc(brokerOf),
			builder.WithPredicates(predicate.Funcs{
				CreateFunc:  func(event.CreateEvent) bool { return false },
				GenericFunc: func(event.GenericEvent) bool { return false },
				DeleteFunc:  func(e event.DeleteEvent) bool { return r.planMayGo(e.Object) },
				UpdateFunc: func(e event.UpdateEvent) bool {
					old, oldOK := e.ObjectOld.(*v1alpha1.ServiceInstance)
					cur, curOK := e.ObjectNew.(*v1alpha1.ServiceInstance)
					return !oldOK || !curOK || (old.Spec.PlanName != cur.Spec.PlanName || old.Spec.ServiceName != cur.Spec.ServiceName) && r.planMayGo(old)
				},
			})).
		Watches(&v1alpha1.ServiceOffering{}, handler.EnqueueRequestsFromMapFunc(r.otherTypedKindBrokers),
			builder.WithPredicates(predicate.Funcs{
				CreateFunc:  func(event.CreateEvent) bool { return false },
				GenericFunc: func(event.GenericEvent) bool { return false },
				DeleteFunc:  func(e event.DeleteEvent) bool { return typedKindShown(e.Object) != "" },
				UpdateFunc:  func(e event.UpdateEvent) bool { return typedKindShown(e.ObjectOld) != typedKindShown(e.ObjectNew) },
			})).
		Watches(&apiextensionsv1.CustomResourceDefinition{}, handler.EnqueueRequestsFromMapFunc(brokerOfCRD)).
		Complete(r)
}

// planMayGo reports whether the plan of obj, an instance that went or left
// its plan, may have to leave the marketplace now: a plan its broker's
// catalog no longer offers (kept, marked removed, while instances use it),
// or one lockstep cannot tell (no catalog loaded). A plan the catalog
// offers stays whatever its instances do, so the broker's marketplace is
// not computed again for every instance deleted.
func (r *Reconciler) planMayGo(obj client.Object) bool {
	si, ok := obj.(*v1alpha1.ServiceInstance)
	if !ok {
		return true
	}
	entry, ok := r.Catalogs.Get(si.Spec.BrokerName)
	if !ok {
		return true
	}
	plan, err := entry.Find(si.Spec.ServiceName, si.Spec.PlanName)
	return err != nil || plan.Removed
}

// brokerOf is the request for the ServiceBroker of an instance.
func brokerOf(_ context.Context, obj client.Object) []reconcile.Request {
	si, ok := obj.(*v1alpha1.ServiceInstance)
	if !ok || si.Spec.BrokerName == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: si.Spec.BrokerName}}}
}

// brokerOfCRD is the request for the ServiceBroker of a typed kind's CRD.
func brokerOfCRD(_ context.Context, obj client.Object) []reconcile.Request {
	if obj.GetLabels()[render.LabelManagedBy] != render.ManagedBy || obj.GetAnnotations()[render.AnnotationBroker] == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: obj.GetAnnotations()[render.AnnotationBroker]}}}
}

// Reconcile brings the broker's ServiceOfferings and ServicePlans in line
// with its cached catalog. Without a catalog (not loaded yet, or the
// broker unreachable since start) it changes nothing; the next catalog load
// writes the broker's status and so starts it again.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var sb v1alpha1.ServiceBroker
	if err := r.Client.Get(ctx, req.NamespacedName, &sb); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		// A deleted broker's marketplace goes with it (garbage
		// collector); the CRDs of its typed kinds go here.
		sb.Name = req.Name
		return r.retireAll(ctx, &sb)
	}
	if sb.DeletionTimestamp != nil {
		return r.retireAll(ctx, &sb)
	}
	entry, ok := r.Catalogs.Get(sb.Name)
	if !ok {
		return ctrl.Result{}, nil
	}
	s := r.newSync(&sb, entry)
	err := s.run(ctx, marketplace.Desired(&sb, entry))
	if errors.Is(err, errStale) {
		return ctrl.Result{RequeueAfter: staleRetry}, nil
	}
	if err == nil && (s.retry || s.after > 0) {
		return s.result(), nil
	}
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("writing the marketplace of ServiceBroker %q (%d writes done): %w", sb.Name, s.writes, err)
	}
	if s.writes > 0 {
		log.FromContext(ctx).Info("marketplace written", "broker", sb.Name, "writes", s.writes)
	}
	return ctrl.Result{}, nil
}

func (r *Reconciler) newSync(sb *v1alpha1.ServiceBroker, entry *catalog.Entry) *sync {
	return &sync{client: r.Client, reader: r.Reader, kinds: r.Kinds, discovery: r.Discovery, retireGrace: r.RetireGrace, broker: sb, entry: entry}
}

// retireAll retires the typed kinds of broker sb, which is gone or being
// deleted: their CRDs and roles are deleted, except where objects of a
// kind remain (then the CRD stays, and it is looked at again later) or
// while a CRD is marked retiring.
func (r *Reconciler) retireAll(ctx context.Context, sb *v1alpha1.ServiceBroker) (ctrl.Result, error) {
	var crds apiextensionsv1.CustomResourceDefinitionList
	if err := r.Client.List(ctx, &crds, client.MatchingLabels{render.LabelManagedBy: render.ManagedBy}); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing the CRDs of the typed kinds of ServiceBroker %q: %w", sb.Name, err)
	}
	s := r.newSync(sb, nil)
	for i := range crds.Items {
		crd := &crds.Items[i]
		if crd.Annotations[render.AnnotationBroker] != sb.Name {
			continue
		}
		if k, held := s.retire(ctx, crd.Annotations[render.AnnotationOfferingID], kindOf(crd)); held {
			if k.condition.Reason != ReasonRetiring {
				s.retry = true
			}
			log.FromContext(ctx).Info("the CRD of a typed kind of a ServiceBroker that is gone stays for now", "crd", crd.Name, "why", k.condition.Message)
		}
	}
	return s.result(), nil
}

// ignoreGone treats an object that is already gone as deleted.
func ignoreGone(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
