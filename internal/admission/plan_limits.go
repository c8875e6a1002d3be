package admission

import (
	"context"
	"net/http"
	"sync"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/access"
	"github.com/lockstep-dev/lockstep/internal/catalog"
	"github.com/lockstep-dev/lockstep/internal/journal"
)

// TypedInstances lists the objects of typed kinds of a namespace, as the
// instances they are (typedkinds.Watcher, from this replica's informers).
type TypedInstances interface {
	InstancesIn(namespace string) []*v1alpha1.ServiceInstance
}

// planLimits refuses a provision, an adoption or a plan change that
// would take its namespace over a per-plan limit of the broker's access
// rules (spec.access[].limits), before the broker is called: 403, with
// the limit, what it counts, the count and the way out. A dry run is
// checked too.
//
// A namespace's use of a limit is counted as the union, by object uid, of
// three sources, so that every replica counts the same and none counts an
// object twice:
//
//   - the instances the cache holds in the namespace (ServiceInstances
//     and the objects of typed kinds), not being deleted, on a plan the
//     limit counts;
//   - the operations in flight at the brokers, from every replica: the
//     locks in lockstep's namespace (read at the API server, past any
//     cache), whose records provision, adopt or move an object to such a
//     plan. A lock is written before its broker call and released only
//     once the committing replica's cache holds the object, so an
//     allowed create is counted from its lock until it is in the cache;
//   - the requests this replica is deciding, from the count until their
//     answer: one namespace's limited requests are decided one at a time
//     in a replica, so that two of them never both take the last unit.
//
// What can exceed a limit: two replicas deciding requests of one
// namespace within the moment between one's count and its lock's write;
// and a replica whose cache lags behind the committing replica's by more
// than the commit takes (the object persisted, its lock released, not in
// this cache yet).
type planLimits struct {
	rules  *access.Store
	reader client.Reader
	typed  TypedInstances
	// leases lists the locks in flight; nil counts none (tests of one
	// replica).
	leases *journal.Leases

	mu       sync.Mutex
	deciding map[string]*namespaceLimits // by namespace
}

// namespaceLimits are the limited requests of one namespace this replica
// is deciding.
type namespaceLimits struct {
	mu    sync.Mutex
	users int
	// held are the objects being decided, with their plans.
	held map[types.UID]heldPlan
}

type heldPlan struct{ broker, service, plan string }

func (c *planLimits) Name() string { return "plan-limits" }

func (c *planLimits) Limit(ctx context.Context, a *Attributes[Instance], t *Target) (func(bool), error) {
	if !t.found() || (a.Operation != admissionv1.Create && (a.Operation != admissionv1.Update || a.Old.Spec.PlanName == a.New.Spec.PlanName)) {
		return nil, nil
	}
	broker, si := t.Entry.Broker, a.New
	rules := c.rules.Get(broker)
	if !rules.HasLimits() {
		return nil, nil
	}
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	if err := c.reader.Get(ctx, client.ObjectKey{Name: si.Namespace}, ns); err != nil {
		return nil, unavailable("could not read the labels of namespace %q, which the per-plan limits of broker %q select by: %v; nothing was changed and the broker was not called: retry",
			si.Namespace, broker, err)
	}
	service, plan := t.Plan.Service.Name, t.Plan.Plan.Name
	var limits []access.Limit
	for _, l := range rules.Limits(ns.Labels) {
		if !l.Counts(service, plan, t.Plan.Plan.IsFree()) {
			continue
		}
		if a.Operation == admissionv1.Update && t.OldPlan != nil && l.Counts(service, a.Old.Spec.PlanName, t.OldPlan.Plan.IsFree()) {
			continue // the instance is counted already
		}
		limits = append(limits, l)
	}
	if len(limits) == 0 {
		return nil, nil
	}

	n := c.enter(si.Namespace)
	n.mu.Lock()
	defer n.mu.Unlock()
	use, err := c.use(ctx, t.Entry, si, n)
	if err != nil {
		c.leave(si.Namespace)
		return nil, unavailable("could not count the instances of namespace %q for the per-plan limits of broker %q: %v; nothing was changed and the broker was not called: retry",
			si.Namespace, broker, err)
	}
	for _, l := range limits {
		held := 0
		for _, u := range use {
			if u.broker == broker && l.Counts(u.service, u.plan, u.free) {
				held++
			}
		}
		if held+1 > int(l.Max) {
			c.leave(si.Namespace)
			msg := access.LimitRefusal(broker, si.Namespace, service, plan, l, held)
			if a.Operation == admissionv1.Create {
				msg += "; nothing was created and the broker was not called"
			} else {
				msg += "; the instance keeps plan " + quote(a.Old.Spec.PlanName) + " and the broker was not called"
			}
			return nil, &apierrors.StatusError{ErrStatus: metav1.Status{
				Status: metav1.StatusFailure, Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden,
				Details: &metav1.StatusDetails{Group: objectKind(si, instanceKind).Group, Name: si.Name},
				Message: msg,
			}}
		}
	}
	if a.DryRun {
		c.leave(si.Namespace)
		return nil, nil
	}
	n.held[si.UID] = heldPlan{broker: broker, service: service, plan: plan}
	var once sync.Once
	return func(bool) {
		once.Do(func() {
			n.mu.Lock()
			delete(n.held, si.UID)
			n.mu.Unlock()
			c.leave(si.Namespace)
		})
	}, nil
}

// used is one instance counted towards a namespace's limits.
type used struct {
	broker, service, plan string
	free                  bool
}

// use is every instance of the namespace of si, other than si, counted
// as the type's comment says. Callers hold n.mu.
func (c *planLimits) use(ctx context.Context, e *catalog.Entry, si Instance, n *namespaceLimits) (map[types.UID]used, error) {
	out := map[types.UID]used{}
	free := func(service, plan string) bool {
		p, err := e.Find(service, plan)
		return err == nil && p.Plan.IsFree()
	}
	add := func(o *v1alpha1.ServiceInstance) {
		if o.UID == si.UID || o.DeletionTimestamp != nil {
			return
		}
		b := o.Spec.BrokerName
		out[o.UID] = used{broker: b, service: o.Spec.ServiceName, plan: o.Spec.PlanName, free: b == e.Broker && free(o.Spec.ServiceName, o.Spec.PlanName)}
	}
	var instances v1alpha1.ServiceInstanceList
	if err := c.reader.List(ctx, &instances, client.InNamespace(si.Namespace)); err != nil {
		return nil, err
	}
	for i := range instances.Items {
		add(&instances.Items[i])
	}
	if c.typed != nil {
		for _, o := range c.typed.InstancesIn(si.Namespace) {
			add(o)
		}
	}
	if c.leases != nil {
		locks, err := c.leases.Locks(ctx)
		if err != nil {
			return nil, err
		}
		for i := range locks {
			if locks[i].Annotations[journal.AnnotationNamespace] != si.Namespace {
				continue
			}
			rec, err := journal.CarriedRecord(&locks[i])
			if err != nil || rec == nil || rec.Spec.BrokerName != e.Broker || rec.Spec.Target.UID == si.UID {
				continue
			}
			switch rec.Spec.Verb {
			case v1alpha1.VerbProvision, v1alpha1.VerbAdopt, v1alpha1.VerbUpdate:
			default:
				continue
			}
			sp, ok := e.PlanByID(rec.Spec.PlanID)
			if !ok {
				continue
			}
			// An object moving to another plan counts under both until
			// the move is committed: it may still fail.
			key := rec.Spec.Target.UID
			if prior, counted := out[key]; counted {
				if prior.plan == sp.Plan.Name {
					continue
				}
				key += "/moving"
			}
			out[key] = used{broker: e.Broker, service: sp.Service.Name, plan: sp.Plan.Name, free: sp.Plan.IsFree()}
		}
	}
	for uid, h := range n.held {
		if _, counted := out[uid]; !counted && uid != si.UID {
			out[uid] = used{broker: h.broker, service: h.service, plan: h.plan, free: free(h.service, h.plan)}
		}
	}
	return out, nil
}

// enter marks a limited request of namespace as being decided here, and
// returns the namespace's state.
func (c *planLimits) enter(namespace string) *namespaceLimits {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.deciding == nil {
		c.deciding = map[string]*namespaceLimits{}
	}
	n := c.deciding[namespace]
	if n == nil {
		n = &namespaceLimits{held: map[types.UID]heldPlan{}}
		c.deciding[namespace] = n
	}
	n.users++
	return n
}

// leave ends what enter began; the namespace's state goes with its last
// request.
func (c *planLimits) leave(namespace string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := c.deciding[namespace]; n != nil {
		if n.users--; n.users == 0 {
			delete(c.deciding, namespace)
		}
	}
}

func quote(s string) string { return `"` + s + `"` }
