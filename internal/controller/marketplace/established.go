package marketplace

// A typed kind's offering says that the kind is served as soon as the API
// server establishes its CRD, kind by kind: a broker's pass applies the
// CRDs of all its activated kinds one after the other and sees them
// established only in the pass after, so with many kinds activated at
// once the first would wait for the last. A CRD lockstep applied that
// becomes established starts a reconcile of its own (controller
// "marketplace-established"), which writes its offering's typed kind
// status and TypedKindReady condition when that is all the broker's pass
// would change of the offering; anything else waits for the pass.

import (
	"context"
	"errors"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/marketplace"
	typedobject "github.com/lockstep-dev/lockstep/internal/typed/object"
	"github.com/lockstep-dev/lockstep/internal/typed/render"
)

// establishedRetry is how soon the status of an established kind is
// written again after the offering changed under it.
const establishedRetry = 50 * time.Millisecond

// setupEstablished registers the controller that writes the status of a
// typed kind once its CRD is established. Like the broker's pass, it
// needs the lead.
func (r *Reconciler) setupEstablished(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).Named("marketplace-established").
		For(&apiextensionsv1.CustomResourceDefinition{}, builder.WithPredicates(predicate.Funcs{
			CreateFunc:  func(event.CreateEvent) bool { return false },
			DeleteFunc:  func(event.DeleteEvent) bool { return false },
			GenericFunc: func(event.GenericEvent) bool { return false },
			UpdateFunc:  func(e event.UpdateEvent) bool { return becameEstablished(e.ObjectOld, e.ObjectNew) },
		})).
		Complete(reconcile.Func(r.reconcileEstablished))
}

// becameEstablished reports whether a CRD lockstep applied for a broker
// was not established in old and is in cur.
func becameEstablished(old, cur client.Object) bool {
	o, oldOK := old.(*apiextensionsv1.CustomResourceDefinition)
	c, curOK := cur.(*apiextensionsv1.CustomResourceDefinition)
	return oldOK && curOK && brokerOfCRD(context.Background(), c) != nil && !typedobject.Established(o) && typedobject.Established(c)
}

// reconcileEstablished writes the typed kind status of the offering whose
// CRD req names, when that CRD is established (see showEstablished).
func (r *Reconciler) reconcileEstablished(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var crd apiextensionsv1.CustomResourceDefinition
	if err := r.Client.Get(ctx, req.NamespacedName, &crd); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !typedobject.Established(&crd) || crd.Labels[render.LabelManagedBy] != render.ManagedBy {
		return reconcile.Result{}, nil
	}
	var sb v1alpha1.ServiceBroker
	if err := r.Client.Get(ctx, client.ObjectKey{Name: crd.Annotations[render.AnnotationBroker]}, &sb); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	entry, ok := r.Catalogs.Get(sb.Name)
	if !ok || sb.DeletionTimestamp != nil {
		return reconcile.Result{}, nil // the broker's pass settles it
	}
	s := r.newSync(&sb, entry)
	err := s.showEstablished(ctx, marketplace.Offerings(&sb, entry), &crd)
	if errors.Is(err, errStale) {
		// The offering was written since the cache read it (most often
		// by the pass that applied the CRD, a moment ago): the cache
		// catches up within moments.
		return reconcile.Result{RequeueAfter: establishedRetry}, nil
	}
	return reconcile.Result{}, err
}

// showEstablished writes the typed kind status of the offering of the
// established CRD crd, when that is all the broker's pass would change of
// it: the offering shows that kind (or none yet: the pass that applied the
// CRD may not have written it), the kind is still the service's, and crd
// is applied from what the kind is rendered from now. want are the
// broker's offerings as its catalog has them.
func (s *sync) showEstablished(ctx context.Context, want []v1alpha1.ServiceOffering, crd *apiextensionsv1.CustomResourceDefinition) error {
	var list v1alpha1.ServiceOfferingList
	if err := s.client.List(ctx, &list); err != nil {
		return err
	}
	id := crd.Annotations[render.AnnotationOfferingID]
	var cur *v1alpha1.ServiceOffering
	for i := range list.Items {
		if o := &list.Items[i]; o.Spec.BrokerName == s.broker.Name && o.Spec.ID == id {
			cur = o
		}
	}
	if cur == nil || (cur.Status.TypedKind != nil && cur.Status.TypedKind.CRDName != crd.Name) {
		return nil // no offering yet, or a kind to retire first
	}
	decide, err := s.kindDecider(ctx, want, list.Items)
	if err != nil {
		return err
	}
	k := decide(id)
	if k.status == nil || k.condition != nil || k.status.CRDName != crd.Name ||
		crd.Annotations[AnnotationAppliedFrom] != appliedFrom(k.status, k.aggregate) || crd.Annotations[AnnotationDeprecated] != "" {
		return nil // the pass applies the CRD again, or retires it
	}
	d := cur.DeepCopy()
	withTypedKind(d, shown(k, crd))
	return s.writeOffering(ctx, cur, d)
}
