package servicebroker

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/access"
	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
	"github.com/lockstep-dev/lockstep/internal/broker/osbclient"
	"github.com/lockstep-dev/lockstep/internal/catalog"
)

// DefaultRelistInterval applies when a ServiceBroker does not set
// spec.relistInterval.
const DefaultRelistInterval = 15 * time.Minute

// Reconciler fetches ServiceBrokers' catalogs into the Cache and writes
// their status.
type Reconciler struct {
	// Client reads ServiceBrokers and ServiceInstances (cached) and writes
	// ServiceBroker status.
	Client client.Client
	// Secrets reads the brokers' credential Secrets (uncached: lockstep
	// does not watch every Secret of the cluster).
	Secrets client.Reader
	// Namespace is lockstep's own namespace, the only one a broker's
	// credentials are read from.
	Namespace string
	// Cache receives the catalogs.
	Cache *catalog.Cache
	// Access receives the compiled access rules (spec.access), before the
	// catalog: admission never finds a broker's catalog without its
	// rules.
	Access *access.Store
	// Timeout bounds each request to a broker.
	Timeout time.Duration
	// Clock reads the time of catalog syncs; the real clock when nil.
	Clock clock.PassiveClock

	mu       sync.Mutex
	failures map[string]int // fetches failed in a row, by broker
}

// After a failed fetch the catalog is fetched again after firstRetry,
// doubling with each failure in a row up to maxRetry: a broker back from
// a long outage is read again within maxRetry, not after the workqueue's
// own back-off, which grows to minutes (a replica that started during the
// outage has no catalog until then: admission refuses, resync is blind).
const (
	firstRetry = time.Second
	maxRetry   = 30 * time.Second
)

// retryAfter counts a failed fetch of broker and returns the wait before
// the next; a nil err forgets the failures.
func (r *Reconciler) retryAfter(broker string, err error) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		delete(r.failures, broker)
		return 0
	}
	if r.failures == nil {
		r.failures = map[string]int{}
	}
	n := r.failures[broker]
	r.failures[broker] = n + 1
	return min(firstRetry<<min(n, 16), maxRetry)
}

// SetupWithManager registers the reconciler and makes it the Cache's
// fetcher. It runs on every replica, leader or not: each replica's
// admission reads its own Cache. A ServiceBroker is reconciled (its
// catalog fetched) when it appears, when its spec changes, when its
// refresh annotation is set, and every relist interval; never for a write
// of its own status, which would fetch the catalog a second time.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.Cache.SetFetcher(r.Fetch)
	return ctrl.NewControllerManagedBy(mgr).Named("servicebroker").
		For(&v1alpha1.ServiceBroker{}, builder.WithPredicates(refreshAndSpecChanges())).
		WithOptions(controller.Options{NeedLeaderElection: ptr.To(false)}).Complete(r)
}

// refreshAndSpecChanges passes what asks for a catalog: a new
// ServiceBroker, a change of its spec, its refresh annotation set.
func refreshAndSpecChanges() predicate.Predicate {
	return predicate.Or(predicate.GenerationChangedPredicate{}, refreshAsked())
}

// refreshAsked passes the update of a ServiceBroker that sets its refresh
// annotation (a new value counts); its removal does not pass.
func refreshAsked() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			v, ok := e.ObjectNew.GetAnnotations()[v1alpha1.AnnotationRefresh]
			return ok && v != e.ObjectOld.GetAnnotations()[v1alpha1.AnnotationRefresh]
		},
	}
}

// Reconcile loads the catalog of one ServiceBroker and summarizes it in the
// broker's status. A failed fetch keeps the last good catalog in the Cache
// (admission goes on with it) and says why in the Ready condition.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var sb v1alpha1.ServiceBroker
	if err := r.Client.Get(ctx, req.NamespacedName, &sb); err != nil {
		if apierrors.IsNotFound(err) {
			r.Cache.Forget(req.Name)
			r.Access.Forget(req.Name)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	if sb.DeletionTimestamp != nil {
		r.Cache.Forget(sb.Name)
		r.Access.Forget(sb.Name)
		return ctrl.Result{}, nil
	}

	rules := access.Compile(sb.Name, sb.Spec.Access)
	r.Access.Set(sb.Name, rules)
	entry, fetchErr := r.fetch(ctx, &sb)
	if fetchErr == nil {
		r.Cache.Store(entry)
	}
	if err := r.writeStatus(ctx, &sb, entry, fetchErr, rules); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.refreshed(ctx, &sb); err != nil {
		return ctrl.Result{}, err
	}
	if retry := r.retryAfter(sb.Name, fetchErr); fetchErr != nil {
		log.FromContext(ctx).Info("catalog fetch failed; will retry", "broker", sb.Name, "in", retry.String(), "error", fetchErr.Error())
		return ctrl.Result{RequeueAfter: retry}, nil
	}
	return ctrl.Result{RequeueAfter: relistInterval(&sb)}, nil
}

// Fetch fetches the named broker's catalog; it is the Cache's Fetcher, for
// admission's refreshes (a request naming a plan the cached catalog does
// not know, a broker refusing ids it no longer has). When the catalog's
// ids changed, it asks every replica to read the catalog again (the
// refresh annotation), so that their caches, the broker's status and the
// marketplace follow the new ids.
func (r *Reconciler) Fetch(ctx context.Context, name string) (*catalog.Entry, error) {
	var sb v1alpha1.ServiceBroker
	if err := r.Client.Get(ctx, client.ObjectKey{Name: name}, &sb); err != nil {
		return nil, fmt.Errorf("reading ServiceBroker %q: %w", name, err)
	}
	prev, _ := r.Cache.Get(name)
	e, err := r.fetch(ctx, &sb)
	if err != nil {
		return nil, err
	}
	if prev != nil && !sameIDs(prev.Catalog, e.Catalog) {
		if err := r.askRefresh(ctx, &sb); err != nil {
			log.FromContext(ctx).Info("could not ask the other replicas to read the changed catalog; they do at the next relist",
				"broker", name, "error", err.Error())
		}
	}
	return e, nil
}

// askRefresh sets the refresh annotation of sb.
func (r *Reconciler) askRefresh(ctx context.Context, sb *v1alpha1.ServiceBroker) error {
	patch := client.MergeFrom(sb.DeepCopy())
	if sb.Annotations == nil {
		sb.Annotations = map[string]string{}
	}
	sb.Annotations[v1alpha1.AnnotationRefresh] = r.now().UTC().Format(time.RFC3339Nano)
	return r.Client.Patch(ctx, sb, patch)
}

// refreshed removes the refresh annotation of sb once its catalog was read
// again, so that the same command asks again next time.
func (r *Reconciler) refreshed(ctx context.Context, sb *v1alpha1.ServiceBroker) error {
	if _, ok := sb.Annotations[v1alpha1.AnnotationRefresh]; !ok {
		return nil
	}
	patch := client.MergeFromWithOptions(sb.DeepCopy(), client.MergeFromWithOptimisticLock{})
	delete(sb.Annotations, v1alpha1.AnnotationRefresh)
	err := r.Client.Patch(ctx, sb, patch)
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return nil // another replica removed it, or set it again: that one reconciles anew
	}
	if err != nil {
		return fmt.Errorf("removing the refresh annotation of ServiceBroker %q: %w", sb.Name, err)
	}
	return nil
}

// sameIDs reports whether two catalogs have the same services and plans,
// by name and id.
func sameIDs(a, b *osbapi.Catalog) bool {
	ids := func(c *osbapi.Catalog) map[[2]string]string {
		out := map[[2]string]string{}
		for _, s := range c.Services {
			out[[2]string{s.Name, ""}] = s.ID
			for _, p := range s.Plans {
				out[[2]string{s.Name, p.Name}] = p.ID
			}
		}
		return out
	}
	x, y := ids(a), ids(b)
	if len(x) != len(y) {
		return false
	}
	for k, v := range x {
		if y[k] != v {
			return false
		}
	}
	return true
}

func (r *Reconciler) fetch(ctx context.Context, sb *v1alpha1.ServiceBroker) (*catalog.Entry, error) {
	cfg, err := catalog.BrokerConfig(ctx, r.Secrets, sb, r.Namespace, r.Timeout)
	if err != nil {
		return nil, err
	}
	c, err := osbclient.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("broker %q is misconfigured: %w", sb.Name, err)
	}
	cat, err := c.Catalog(ctx, osbclient.RequestMeta{})
	if err != nil {
		return nil, fmt.Errorf("fetching the catalog of broker %q: %w", sb.Name, err)
	}
	if err := cat.Validate(); err != nil {
		return nil, fmt.Errorf("broker %q serves an invalid catalog: %w", sb.Name, err)
	}
	removed, err := r.removedInUse(ctx, sb, cat)
	if err != nil {
		return nil, err
	}
	return catalog.NewEntry(sb.Name, c, cat, removed, r.now()), nil
}

// removedInUse returns the plans that were in an earlier catalog (the
// cached entry, or the broker's status after a restart) but not in cat,
// and that some ServiceInstance still uses.
func (r *Reconciler) removedInUse(ctx context.Context, sb *v1alpha1.ServiceBroker, cat *osbapi.Catalog) ([]osbapi.ServicePlan, error) {
	var earlier []osbapi.ServicePlan
	if prev, ok := r.Cache.Get(sb.Name); ok {
		earlier = append(earlier, prev.Removed...)
		for i := range prev.Catalog.Services {
			s := &prev.Catalog.Services[i]
			for j := range s.Plans {
				earlier = append(earlier, osbapi.ServicePlan{Service: s, Plan: &s.Plans[j]})
			}
		}
	} else {
		for _, s := range sb.Status.Services {
			svc := &osbapi.Service{ID: s.ID, Name: s.Name, Bindable: s.Bindable, PlanUpdateable: s.PlanUpdateable}
			for _, p := range s.Plans {
				earlier = append(earlier, osbapi.ServicePlan{Service: svc, Plan: &osbapi.Plan{ID: p.ID, Name: p.Name}})
			}
		}
	}
	if len(earlier) == 0 {
		return nil, nil
	}
	var instances v1alpha1.ServiceInstanceList
	if err := r.Client.List(ctx, &instances); err != nil {
		return nil, fmt.Errorf("listing ServiceInstances to find plans still in use: %w", err)
	}
	inUse := map[[2]string]bool{}
	for _, si := range instances.Items {
		if si.Spec.BrokerName == sb.Name {
			inUse[[2]string{si.Spec.ServiceName, si.Spec.PlanName}] = true
		}
	}
	var removed []osbapi.ServicePlan
	seen := map[string]bool{}
	for _, sp := range earlier {
		// A plan the catalog still offers under the same names, with new
		// ids (a broker restarted with new ids), is that plan, not a
		// removed one: instances name their plan by name.
		if _, err := cat.FindPlan(sp.Service.Name, sp.Plan.Name); err == nil {
			continue
		}
		if seen[sp.Plan.ID] || inCatalog(cat, sp.Plan.ID) || !inUse[[2]string{sp.Service.Name, sp.Plan.Name}] {
			continue
		}
		seen[sp.Plan.ID] = true
		removed = append(removed, sp)
	}
	return removed, nil
}

func inCatalog(cat *osbapi.Catalog, planID string) bool {
	for _, s := range cat.Services {
		if _, ok := s.FindPlanByID(planID); ok {
			return true
		}
	}
	return false
}

func (r *Reconciler) writeStatus(ctx context.Context, sb *v1alpha1.ServiceBroker, e *catalog.Entry, fetchErr error, rules *access.Rules) error {
	patch := client.MergeFrom(sb.DeepCopy())
	meta.SetStatusCondition(&sb.Status.Conditions, accessCondition(sb, rules))
	cond := metav1.Condition{Type: v1alpha1.ConditionReady, ObservedGeneration: sb.Generation}
	if fetchErr != nil {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, "CatalogUnavailable", fetchErr.Error()
	} else {
		services, plans := summarize(e)
		sb.Status.Services = services
		now := metav1.NewTime(e.FetchedAt)
		sb.Status.LastCatalogSync = &now
		cond.Status, cond.Reason = metav1.ConditionTrue, "CatalogLoaded"
		cond.Message = fmt.Sprintf("catalog loaded: %d services, %d plans", len(e.Catalog.Services), plans)
		meta.SetStatusCondition(&sb.Status.Conditions, schemasCondition(e, sb.Generation))
	}
	meta.SetStatusCondition(&sb.Status.Conditions, cond)
	if err := r.Client.Status().Patch(ctx, sb, patch); err != nil {
		return fmt.Errorf("writing the status of ServiceBroker %q: %w", sb.Name, err)
	}
	return nil
}

// summarize turns an entry into the status summary: every service and plan,
// with removed plans marked.
func summarize(e *catalog.Entry) ([]v1alpha1.ServiceSummary, int) {
	var out []v1alpha1.ServiceSummary
	index := map[string]int{}
	plans := 0
	add := func(s *osbapi.Service, p *osbapi.Plan, removed bool) {
		i, ok := index[s.ID]
		if !ok {
			i = len(out)
			index[s.ID] = i
			out = append(out, v1alpha1.ServiceSummary{Name: s.Name, ID: s.ID, Bindable: s.Bindable, PlanUpdateable: s.PlanUpdateable})
		}
		out[i].Plans = append(out[i].Plans, v1alpha1.PlanSummary{Name: p.Name, ID: p.ID, Free: p.IsFree(), RemovedFromCatalog: removed})
		plans++
	}
	for i := range e.Catalog.Services {
		s := &e.Catalog.Services[i]
		if len(s.Plans) == 0 {
			index[s.ID] = len(out)
			out = append(out, v1alpha1.ServiceSummary{Name: s.Name, ID: s.ID, Bindable: s.Bindable, PlanUpdateable: s.PlanUpdateable})
		}
		for j := range s.Plans {
			add(s, &s.Plans[j], false)
		}
	}
	for _, sp := range e.Removed {
		add(sp.Service, sp.Plan, true)
	}
	return out, plans
}

// accessCondition says whether the broker's access rules are in force.
func accessCondition(sb *v1alpha1.ServiceBroker, rules *access.Rules) metav1.Condition {
	cond := metav1.Condition{Type: v1alpha1.ConditionAccessRules, ObservedGeneration: sb.Generation, Status: metav1.ConditionTrue}
	switch {
	case rules.Err() != nil:
		cond.Status, cond.Reason = metav1.ConditionFalse, "Invalid"
		cond.Message = fmt.Sprintf("%v: no namespace may provision, change plan or bind at this broker until spec.access is fixed", rules.Err())
	case len(sb.Spec.Access) == 0:
		cond.Reason, cond.Message = "Open", "no access rules: every namespace may use every plan"
	default:
		cond.Reason = "InForce"
		cond.Message = fmt.Sprintf("%d access rules: a namespace may use a plan only where a rule that selects it opens the plan (kubectl get serviceplans shows each plan's access)", len(sb.Spec.Access))
	}
	return cond
}

func relistInterval(sb *v1alpha1.ServiceBroker) time.Duration {
	if sb.Spec.RelistInterval != nil && sb.Spec.RelistInterval.Duration > 0 {
		return sb.Spec.RelistInterval.Duration
	}
	return DefaultRelistInterval
}

func (r *Reconciler) now() time.Time {
	if r.Clock != nil {
		return r.Clock.Now()
	}
	return time.Now()
}
