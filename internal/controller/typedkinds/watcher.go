package typedkinds

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/controller/brokered"
	"github.com/lockstep-dev/lockstep/internal/typed/object"
	"github.com/lockstep-dev/lockstep/internal/typed/render"
)

// Watcher keeps an informer of each typed kind's objects, indexed by
// spec.externalID, while the kind's CustomResourceDefinition is
// established, and runs the kind's instance reconciler on top of it; it
// stops both before the CRD goes. It is a manager Runnable that runs in
// every replica, since every replica serves admission, which reads the
// index (ExternalIDHolders); like the other reconcilers, the typed kinds'
// start only once the replica is elected.
type Watcher struct {
	// Config is what each kind's reconciler is made with; its Client and
	// APIReader are wrapped to read and write the kind's objects as the
	// model.
	Config brokered.Config
	// Cache is the manager's cache: each kind's informer is started in
	// it, and removed from it when the kind stops.
	Cache cache.Cache
	// Elected is closed once this replica leads (the manager's Elected);
	// the kinds' reconcilers start then. Nil: at once.
	Elected <-chan struct{}

	mu      sync.Mutex
	ctx     context.Context // the Watcher's, while it runs
	running map[string]*run // by CRD name
	// informing is running without its lock, for admission and metrics,
	// which must not wait while a kind stops: by CRD name.
	informing sync.Map
}

// run is the informer of one typed kind and, once elected, its
// reconciler, running.
type run struct {
	kind   object.Kind
	cancel context.CancelFunc
	done   chan struct{}
	// informer is the kind's informer once it is indexed; nil before.
	informer atomic.Pointer[toolscache.SharedIndexInformer]
	// reconciling is set once the kind's reconciler runs.
	reconciling atomic.Bool
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: the
// informers run in every replica, the reconcilers only once elected.
func (w *Watcher) NeedLeaderElection() bool { return false }

// terminatingRecheck is how often the CRD of a kind being deleted is
// looked at again while objects of the kind are left.
const terminatingRecheck = 2 * time.Second

// Start watches lockstep's CRDs until ctx ends, then stops every kind.
func (w *Watcher) Start(ctx context.Context) error {
	w.mu.Lock()
	w.ctx, w.running = ctx, map[string]*run{}
	w.mu.Unlock()
	defer w.stopAll()
	c, err := controller.NewUnmanaged("typedkinds", controller.Options{Reconciler: w, SkipNameValidation: ptr.To(true),
		Logger: log.Log.WithName("typedkinds")})
	if err != nil {
		return err
	}
	ours := predicate.NewTypedPredicateFuncs(func(crd *apiextensionsv1.CustomResourceDefinition) bool {
		return crd.Labels[render.LabelManagedBy] == render.ManagedBy && crd.Spec.Group == render.Group
	})
	if err := c.Watch(source.Kind(w.Cache, &apiextensionsv1.CustomResourceDefinition{},
		&handler.TypedEnqueueRequestForObject[*apiextensionsv1.CustomResourceDefinition]{}, ours)); err != nil {
		return err
	}
	return c.Start(ctx)
}

// Reconcile starts the kind of CRD req names (its informer, and its
// reconciler once elected) once it is established, and stops it once the
// CRD is gone, no longer established, or being deleted with no object of
// the kind left. While a CRD is being deleted the API server deletes its
// objects first: the reconciler keeps running until they are gone, so
// that lockstep's finalizer lets each go (removing it at its broker
// first), and the CRD's deletion finishes.
func (w *Watcher) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := w.Cache.Get(ctx, req.NamespacedName, crd); err != nil {
		if apierrors.IsNotFound(err) {
			w.stop(ctx, req.Name, "its CustomResourceDefinition is gone")
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	kind, ok := object.KindOf(crd)
	switch {
	case !ok:
		w.stop(ctx, crd.Name, "its CustomResourceDefinition is not one lockstep rendered")
	case crd.DeletionTimestamp != nil:
		left, err := w.objectsLeft(ctx, kind)
		if err != nil {
			return reconcile.Result{}, err
		}
		if !left {
			w.stop(ctx, crd.Name, "its CustomResourceDefinition is being deleted and no object of the kind is left")
			return reconcile.Result{}, nil
		}
		if object.Established(crd) {
			// Also in a replica that takes the lead while a CRD is
			// being deleted: its objects are let go.
			if err := w.start(ctx, crd.Name, kind); err != nil {
				return reconcile.Result{}, err
			}
		}
		return reconcile.Result{RequeueAfter: terminatingRecheck}, nil
	case !object.Established(crd):
		w.stop(ctx, crd.Name, "its CustomResourceDefinition is not established")
	default:
		return reconcile.Result{}, w.start(ctx, crd.Name, kind)
	}
	return reconcile.Result{}, nil
}

// objectsLeft reports whether the API server still holds objects of
// kind; it asks past the cache, which holds them only while the kind's
// reconciler runs.
func (w *Watcher) objectsLeft(ctx context.Context, kind object.Kind) (bool, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(kind.GVK.GroupVersion().WithKind(kind.GVK.Kind + "List"))
	if err := w.Config.APIReader.List(ctx, list, client.Limit(1)); err != nil {
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			return false, nil
		}
		return false, fmt.Errorf("listing the %s objects left: %w", kind.GVK.Kind, err)
	}
	return len(list.Items) > 0, nil
}

// start starts kind, unless it runs already; another kind under the same
// CRD is stopped first. Its informer is indexed and synced first; its
// reconciler starts on top of it once the replica is elected.
func (w *Watcher) start(ctx context.Context, crd string, kind object.Kind) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if r, ok := w.running[crd]; ok {
		select {
		case <-r.done:
			w.stopLocked(ctx, crd, "its controller stopped on its own; started again")
		default:
			if r.kind == kind {
				return nil
			}
			w.stopLocked(ctx, crd, "its CustomResourceDefinition now says another kind")
		}
	}
	rctx, cancel := context.WithCancel(w.ctx)
	r := &run{kind: kind, cancel: cancel, done: make(chan struct{})}
	rec := New(w.Config, w.Cache, kind)
	c, err := controller.NewUnmanaged(strings.ToLower(kind.GVK.Kind), controller.Options{
		Reconciler: rec, MaxConcurrentReconciles: max(w.Config.Workers, 1), SkipNameValidation: ptr.To(true),
		Logger: log.Log.WithName("typedkinds").WithValues("kind", kind.GVK.Kind),
	})
	if err == nil {
		err = c.Watch(watch(w.Cache, typedObject(kind), self))
	}
	if err == nil {
		err = c.Watch(watch(w.Cache, &v1alpha1.BrokerOperation{}, rec.TargetOf))
	}
	if err != nil {
		cancel()
		return fmt.Errorf("starting the controller of %s: %w", kind.GVK.Kind, err)
	}
	go func() {
		defer close(r.done)
		if err := w.index(rctx, r); err != nil {
			if rctx.Err() == nil {
				log.FromContext(ctx).Error(err, "indexing the objects of a typed kind", "kind", kind.GVK.Kind)
			}
			return
		}
		select {
		case <-w.elected():
		case <-rctx.Done():
			return
		}
		r.reconciling.Store(true)
		log.FromContext(ctx).Info("reconciling a typed kind", "kind", kind.GVK.Kind, "crd", crd)
		if err := c.Start(rctx); err != nil {
			log.FromContext(ctx).Error(err, "the controller of a typed kind stopped", "kind", kind.GVK.Kind)
		}
	}()
	w.running[crd] = r
	w.informing.Store(crd, r)
	log.FromContext(ctx).Info("informing on a typed kind", "kind", kind.GVK.Kind, "crd", crd)
	return nil
}

// elected is closed once the replica leads.
func (w *Watcher) elected() <-chan struct{} {
	if w.Elected == nil {
		closed := make(chan struct{})
		close(closed)
		return closed
	}
	return w.Elected
}

// index gets r's kind's informer from the cache, indexes it by
// spec.externalID, and waits until it holds every object; ExternalIDHolders
// reads it from then on.
func (w *Watcher) index(ctx context.Context, r *run) error {
	inf, err := informer(ctx, w.Cache, typedObject(r.kind))
	if err != nil {
		return err
	}
	shared, ok := inf.(toolscache.SharedIndexInformer)
	if !ok {
		return fmt.Errorf("the informer of %s is a %T, which cannot be indexed", r.kind.GVK.Kind, inf)
	}
	if err := shared.AddIndexers(toolscache.Indexers{externalIDIndex: externalIDOf}); err != nil {
		return fmt.Errorf("indexing the objects of %s by spec.externalID: %w", r.kind.GVK.Kind, err)
	}
	if !toolscache.WaitForCacheSync(ctx.Done(), shared.HasSynced) {
		return ctx.Err()
	}
	r.informer.Store(&shared)
	return nil
}

// stop stops the reconciler of the kind of crd, if it runs, and removes
// its informer from the cache.
func (w *Watcher) stop(ctx context.Context, crd, why string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopLocked(ctx, crd, why)
}

func (w *Watcher) stopLocked(ctx context.Context, crd, why string) {
	r, ok := w.running[crd]
	if !ok {
		return
	}
	w.informing.Delete(crd)
	r.cancel()
	<-r.done
	if err := w.Cache.RemoveInformer(ctx, typedObject(r.kind)); err != nil {
		log.FromContext(ctx).Error(err, "removing the informer of a typed kind", "kind", r.kind.GVK.Kind)
	}
	delete(w.running, crd)
	log.FromContext(ctx).Info("stopped reconciling a typed kind", "kind", r.kind.GVK.Kind, "crd", crd, "why", why)
}

// stopAll stops every kind's reconciler.
func (w *Watcher) stopAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for crd := range w.running {
		w.stopLocked(context.Background(), crd, "lockstep's reconcilers stop")
	}
}

// Running are the kinds whose reconciler runs.
func (w *Watcher) Running() []object.Kind {
	w.mu.Lock()
	defer w.mu.Unlock()
	var kinds []object.Kind
	for _, r := range w.running {
		if r.reconciling.Load() {
			kinds = append(kinds, r.kind)
		}
	}
	return kinds
}

// typedObject is an empty object of kind, as the cache keys its informer.
func typedObject(kind object.Kind) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(kind.GVK)
	return u
}
