package marketplace

import (
	"context"
	"errors"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/catalog"
	"github.com/lockstep-dev/lockstep/internal/marketplace"
	"github.com/lockstep-dev/lockstep/internal/metrics"
	"github.com/lockstep-dev/lockstep/internal/typed/inuse"
	"github.com/lockstep-dev/lockstep/internal/typed/render"
)

// sync is one pass over one broker's marketplace: it compares what the API
// server holds (the cache) with what the catalog says, and writes only the
// differences.
type sync struct {
	client client.Client
	// reader reads past the cache; kinds lists the objects of typed kinds.
	reader client.Reader
	kinds  dynamic.Interface
	// discovery lists the resources the API server serves; nil: none.
	discovery discovery.DiscoveryInterface
	broker    *v1alpha1.ServiceBroker
	entry     *catalog.Entry // the broker's catalog
	writes    int
	// retry: something failed that a later pass may do; the offerings
	// say what.
	retry bool
	// after, when set, is how soon a later pass is to go on with what
	// this one started (the retirement of a kind).
	after time.Duration
	// retireGrace is how long the CRD of a kind being retired stays
	// marked before its objects are listed for the last time.
	retireGrace time.Duration
}

// requeue asks for a pass again in d at the latest.
func (s *sync) requeue(d time.Duration) {
	if s.after == 0 || d < s.after {
		s.after = d
	}
}

// result is when the pass is to run again, if at all.
func (s *sync) result() ctrl.Result {
	after := s.after
	if s.retry && (after == 0 || retryAfter < after) {
		after = retryAfter
	}
	return ctrl.Result{RequeueAfter: after}
}

// errStale says the cache was behind the API server (an object created or
// changed by the previous pass is not in it yet): the pass stops (after
// the other offerings, when it is an offering's write) and runs again
// shortly, with nothing logged as an error.
var errStale = errors.New("the cache is behind the API server")

// planKey is what ServiceInstances name a plan by.
type planKey struct{ service, plan string }

func (s *sync) run(ctx context.Context, want marketplace.Catalog) error {
	keptServices, err := s.syncPlans(ctx, want.Plans, &usedPlans{s: s})
	if err != nil {
		return err
	}
	return s.syncOfferings(ctx, want.Offerings, keptServices)
}

// usedPlans are the plans of this broker that some ServiceInstance or
// object of a typed kind names. Only a plan that leaves the catalog asks,
// so they are read when one first does, once per pass: a list of a typed
// kind's objects goes to the API server, which makes it wait while the
// kind's watch cache starts (a kind just established), and a pass that
// activates kinds has no plan leaving.
type usedPlans struct {
	s     *sync
	plans map[planKey]bool
	err   error
	read  bool
}

// has reports whether a ServiceInstance or an object of a typed kind names
// plan k.
func (u *usedPlans) has(ctx context.Context, k planKey) (bool, error) {
	if !u.read {
		u.plans, u.err = u.s.plansInUse(ctx)
		u.read = true
	}
	return u.plans[k], u.err
}

// plansInUse are the plans of this broker that some ServiceInstance names.
func (s *sync) plansInUse(ctx context.Context) (map[planKey]bool, error) {
	var instances v1alpha1.ServiceInstanceList
	if err := s.client.List(ctx, &instances); err != nil {
		return nil, fmt.Errorf("listing ServiceInstances to find the plans in use: %w", err)
	}
	out := map[planKey]bool{}
	for _, si := range instances.Items {
		if si.Spec.BrokerName == s.broker.Name {
			out[planKey{si.Spec.ServiceName, si.Spec.PlanName}] = true
		}
	}
	return out, s.typedPlansInUse(ctx, out)
}

// typedPlansInUse adds to inUse the plans that objects of the broker's
// typed kinds name (spec.plan), so that a plan leaving the catalog stays
// while they do, as for ServiceInstances.
func (s *sync) typedPlansInUse(ctx context.Context, inUse map[planKey]bool) error {
	var crds apiextensionsv1.CustomResourceDefinitionList
	if err := s.client.List(ctx, &crds, client.MatchingLabels{render.LabelManagedBy: render.ManagedBy}); err != nil {
		return fmt.Errorf("listing the CRDs of typed kinds to find the plans in use: %w", err)
	}
	for i := range crds.Items {
		crd := &crds.Items[i]
		if crd.Annotations[render.AnnotationBroker] != s.broker.Name {
			continue
		}
		objs, err := inuse.Objects(ctx, s.kinds, kindOf(crd))
		if err != nil {
			return err
		}
		service := crd.Annotations[render.AnnotationServiceName]
		for _, o := range objs {
			if plan, _, _ := unstructured.NestedString(o.Object, "spec", "plan"); plan != "" {
				inUse[planKey{service, plan}] = true
			}
		}
	}
	return nil
}

// syncPlans writes the broker's ServicePlans, matched to catalog plans by
// OSB id, and returns the ids of the services that keep a ServicePlan.
func (s *sync) syncPlans(ctx context.Context, want []v1alpha1.ServicePlan, inUse *usedPlans) (map[string]bool, error) {
	var list v1alpha1.ServicePlanList
	if err := s.client.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing ServicePlans: %w", err)
	}
	stored := map[string]*v1alpha1.ServicePlan{} // by plan id
	named := map[string]*v1alpha1.ServicePlan{}  // by object name
	for i := range list.Items {
		if p := &list.Items[i]; p.Spec.BrokerName == s.broker.Name {
			stored[p.Spec.ID] = p
			named[p.Name] = p
		}
	}
	kept := map[string]bool{}
	wanted := map[string]bool{}
	for i := range want {
		d := &want[i]
		wanted[d.Spec.ID] = true
		cur := stored[d.Spec.ID]
		if prev := named[d.Name]; cur == nil && prev != nil && stored[prev.Spec.ID] == prev && !wantsID(want, prev.Spec.ID) {
			// The same plan under a new id (the broker was restarted
			// with new ids): the object follows the catalog's id.
			cur = prev
			wanted[prev.Spec.ID] = true
		}
		if d.Status.RemovedFromCatalog {
			used, err := inUse.has(ctx, planKey{d.Spec.ServiceName, d.Spec.Name})
			if err != nil {
				return nil, err
			}
			if !used {
				if cur != nil {
					if err := s.delete(ctx, cur, "ServicePlan"); err != nil {
						return nil, err
					}
				}
				continue
			}
		}
		kept[d.Spec.ServiceID] = true
		if err := s.writePlan(ctx, cur, d); err != nil {
			return nil, err
		}
	}
	// Plans no catalog knows any more (not even as removed and in use).
	for id, cur := range stored {
		if wanted[id] {
			continue
		}
		used, err := inUse.has(ctx, planKey{cur.Spec.ServiceName, cur.Spec.Name})
		if err != nil {
			return nil, err
		}
		if !used {
			if err := s.delete(ctx, cur, "ServicePlan"); err != nil {
				return nil, err
			}
			continue
		}
		kept[cur.Spec.ServiceID] = true
		d := cur.DeepCopy()
		d.Status.RemovedFromCatalog = true
		if err := s.writePlan(ctx, cur, d); err != nil {
			return nil, err
		}
	}
	return kept, nil
}

// writePlan makes the stored plan cur (nil: none yet) what d says.
func (s *sync) writePlan(ctx context.Context, cur, d *v1alpha1.ServicePlan) error {
	return writeEntry(ctx, s, "ServicePlan", cur, d, marketplace.PlanSpecChanged,
		func(next, d *v1alpha1.ServicePlan) { next.Spec = d.Spec }, withMarketplaceStatus)
}

// syncOfferings writes the broker's ServiceOfferings: one per service of
// the catalog, and one marked removed per service that left it but keeps
// a plan in use (keptServices, by id); each with its typed kind.
func (s *sync) syncOfferings(ctx context.Context, want []v1alpha1.ServiceOffering, keptServices map[string]bool) error {
	var list v1alpha1.ServiceOfferingList
	if err := s.client.List(ctx, &list); err != nil {
		return fmt.Errorf("listing ServiceOfferings: %w", err)
	}
	kinds, err := s.typedKinds(ctx, want, list.Items)
	if err != nil {
		return err
	}
	stored := map[string]*v1alpha1.ServiceOffering{} // by service id
	named := map[string]*v1alpha1.ServiceOffering{}  // by object name
	for i := range list.Items {
		if o := &list.Items[i]; o.Spec.BrokerName == s.broker.Name {
			stored[o.Spec.ID] = o
			named[o.Name] = o
		}
	}
	wanted := map[string]bool{}
	stale := false
	for i := range want {
		d := &want[i]
		wanted[d.Spec.ID] = true
		cur := stored[d.Spec.ID]
		if prev := named[d.Name]; cur == nil && prev != nil && !offersID(want, prev.Spec.ID) {
			// The same service under a new id: the object follows it.
			cur = prev
			wanted[prev.Spec.ID] = true
		}
		if d.Status.RemovedFromCatalog && !keptServices[d.Spec.ID] {
			if cur != nil && !s.keepsKind(ctx, cur) {
				if err := s.delete(ctx, cur, "ServiceOffering"); err != nil {
					return err
				}
			}
			continue
		}
		withTypedKind(d, s.settleKind(ctx, cur, d.Spec.ID, kinds[d.Spec.ID]))
		if err := s.writeOffering(ctx, cur, d); err != nil {
			if !errors.Is(err, errStale) {
				return err
			}
			// Written since the pass read it (its kind was established
			// meanwhile, see established.go): the other offerings go
			// on, and the next pass looks at this one again.
			stale = true
		}
	}
	for id, cur := range stored {
		if wanted[id] {
			continue
		}
		if !keptServices[id] {
			if !s.keepsKind(ctx, cur) {
				if err := s.delete(ctx, cur, "ServiceOffering"); err != nil {
					return err
				}
			}
			continue
		}
		d := cur.DeepCopy()
		d.Status.RemovedFromCatalog = true
		if selected, _ := marketplace.ActivatedKind(s.broker, cur.Spec.Name); !selected {
			withTypedKind(d, s.settleKind(ctx, cur, id, typedKind{}))
		}
		if err := s.writeOffering(ctx, cur, d); err != nil {
			return err
		}
	}
	if stale {
		return errStale
	}
	return nil
}

// keepsKind retires the typed kind of offering cur, which leaves the
// catalog, and reports whether objects of the kind keep it (and so the
// offering, which shows it): then the offering is marked removed and says
// so.
func (s *sync) keepsKind(ctx context.Context, cur *v1alpha1.ServiceOffering) bool {
	if cur.Status.TypedKind == nil {
		return false
	}
	k, held := s.retire(ctx, cur.Spec.ID, cur.Status.TypedKind)
	if !held {
		return false
	}
	d := cur.DeepCopy()
	d.Status.RemovedFromCatalog = true
	withTypedKind(d, k)
	if err := s.writeOffering(ctx, cur, d); err != nil {
		log.FromContext(ctx).Error(err, "writing the status of an offering that left the catalog; lockstep tries again", "offering", cur.Name)
		s.retry = true
	}
	return true
}

// offersID reports whether want has an offering of service id.
func offersID(want []v1alpha1.ServiceOffering, id string) bool {
	for i := range want {
		if want[i].Spec.ID == id {
			return true
		}
	}
	return false
}

// wantsID reports whether want has a plan of id.
func wantsID(want []v1alpha1.ServicePlan, id string) bool {
	for i := range want {
		if want[i].Spec.ID == id {
			return true
		}
	}
	return false
}

// writeOffering makes the stored offering cur (nil: none yet) what d says.
func (s *sync) writeOffering(ctx context.Context, cur, d *v1alpha1.ServiceOffering) error {
	return writeEntry(ctx, s, "ServiceOffering", cur, d, marketplace.OfferingSpecChanged,
		func(next, d *v1alpha1.ServiceOffering) { next.Spec = d.Spec },
		func(cur, d *v1alpha1.ServiceOffering) (*v1alpha1.ServiceOffering, bool) {
			next := cur.DeepCopy()
			status, changed := marketplace.OfferingStatusChanged(cur.Status, d.Status)
			next.Status = status
			return next, changed
		})
}

// withTypedKind puts the typed kind k in the desired offering d's status:
// its status and TypedKindReady condition, or neither.
func withTypedKind(d *v1alpha1.ServiceOffering, k typedKind) {
	d.Status.TypedKind = k.status
	meta.RemoveStatusCondition(&d.Status.Conditions, v1alpha1.ConditionTypedKindReady)
	if k.condition != nil {
		d.Status.Conditions = append(d.Status.Conditions, *k.condition)
	}
}

// entry is a ServiceOffering or a ServicePlan.
type entry interface {
	comparable
	client.Object
	GetMarketplaceStatus() *v1alpha1.MarketplaceStatus
}

// writeEntry makes the stored entry cur (nil: none yet) what d says, with
// as few writes as that takes: a delete and a create when the entry was
// renamed at the broker, an update when its spec changed (setSpec copies
// it), a status update when its status changed (withStatus returns cur
// with d's status, and whether that differs).
func writeEntry[T entry](ctx context.Context, s *sync, kind string, cur, d T, specChanged func(cur, d T) bool, setSpec func(next, d T), withStatus func(cur, d T) (T, bool)) error {
	var none T
	if cur != none && cur.GetName() != d.GetName() { // renamed at the broker
		if err := s.delete(ctx, cur, kind); err != nil {
			return err
		}
		cur = none
	}
	switch {
	case cur == none:
		created := d.DeepCopyObject().(T)
		*created.GetMarketplaceStatus() = v1alpha1.MarketplaceStatus{} // the API server drops it; written next
		if err := s.create(ctx, created, kind); err != nil {
			return err
		}
		cur = created
	case specChanged(cur, d):
		next := cur.DeepCopyObject().(T)
		setSpec(next, d)
		next.SetOwnerReferences(d.GetOwnerReferences())
		next.SetLabels(brokerLabel(next.GetLabels(), d.GetLabels()))
		if err := s.update(ctx, next, kind); err != nil {
			return err
		}
		cur = next
	}
	next, changed := withStatus(cur, d)
	if !changed {
		return nil
	}
	return s.updateStatus(ctx, next, kind)
}

// withMarketplaceStatus returns cur with d's removed flag and conditions
// (see marketplace.StatusChanged), and whether that differs from cur.
func withMarketplaceStatus[T entry](cur, d T) (T, bool) {
	status, changed := marketplace.StatusChanged(*cur.GetMarketplaceStatus(), *d.GetMarketplaceStatus())
	next := cur.DeepCopyObject().(T)
	*next.GetMarketplaceStatus() = status
	return next, changed
}

// brokerLabel returns labels with the broker label set (or removed) as
// want has it, and every other label kept.
func brokerLabel(labels, want map[string]string) map[string]string {
	if v, ok := want[v1alpha1.LabelBroker]; ok {
		if labels == nil {
			labels = map[string]string{}
		}
		labels[v1alpha1.LabelBroker] = v
		return labels
	}
	delete(labels, v1alpha1.LabelBroker)
	return labels
}

func (s *sync) create(ctx context.Context, obj client.Object, kind string) error {
	if err := s.client.Create(ctx, obj); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return errStale
		}
		return fmt.Errorf("creating %s %q: %w", kind, obj.GetName(), err)
	}
	s.count(kind, "create")
	return nil
}

func (s *sync) update(ctx context.Context, obj client.Object, kind string) error {
	if err := s.client.Update(ctx, obj); err != nil {
		if apierrors.IsConflict(err) {
			return errStale
		}
		return fmt.Errorf("updating %s %q: %w", kind, obj.GetName(), err)
	}
	s.count(kind, "update")
	return nil
}

func (s *sync) updateStatus(ctx context.Context, obj client.Object, kind string) error {
	if err := s.client.Status().Update(ctx, obj); err != nil {
		if apierrors.IsConflict(err) {
			return errStale
		}
		return fmt.Errorf("writing the status of %s %q: %w", kind, obj.GetName(), err)
	}
	s.count(kind, "status")
	return nil
}

func (s *sync) delete(ctx context.Context, obj client.Object, kind string) error {
	if err := ignoreGone(s.client.Delete(ctx, obj, client.Preconditions{UID: ptrUID(obj)})); err != nil {
		return fmt.Errorf("deleting %s %q: %w", kind, obj.GetName(), err)
	}
	s.count(kind, "delete")
	return nil
}

func (s *sync) count(kind, verb string) {
	s.writes++
	metrics.MarketplaceWrite(kind, verb)
}

// ptrUID is obj's UID, for a delete that must not hit a newer object of
// the same name.
func ptrUID(obj client.Object) *types.UID {
	uid := obj.GetUID()
	return &uid
}
