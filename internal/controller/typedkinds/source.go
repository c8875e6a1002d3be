package typedkinds

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// watch is a source of a controller that starts and stops while the
// manager runs: the objects of obj's kind in c, each mapped to the
// requests of mapFn. Unlike a source.Kind, it removes its handler from
// the informer when the controller stops, so that a stopped controller
// leaves nothing on an informer other controllers share. Start returns
// once the informer holds every object, or ctx ends.
func watch(c cache.Cache, obj client.Object, mapFn handler.MapFunc) source.Source {
	return source.Func(func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		inf, err := informer(ctx, c, obj)
		if err != nil {
			return err
		}
		enqueue := func(o any) {
			if gone, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
				o = gone.Obj
			}
			if co, ok := o.(client.Object); ok {
				for _, req := range mapFn(ctx, co) {
					q.Add(req)
				}
			}
		}
		reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc: enqueue, UpdateFunc: func(_, o any) { enqueue(o) }, DeleteFunc: enqueue,
		})
		if err != nil {
			return fmt.Errorf("watching %T %s: %w", obj, obj.GetObjectKind().GroupVersionKind().Kind, err)
		}
		go func() {
			<-ctx.Done()
			_ = inf.RemoveEventHandler(reg)
		}()
		toolscache.WaitForCacheSync(ctx.Done(), reg.HasSynced)
		return nil
	})
}

// informer returns the informer of obj's kind in c, without waiting for
// it to sync. The API server's discovery may serve a kind a moment after
// its CRD is established: until it does, the informer is asked for again,
// until ctx ends.
func informer(ctx context.Context, c cache.Cache, obj client.Object) (cache.Informer, error) {
	var inf cache.Informer
	var last error
	err := wait.PollUntilContextCancel(ctx, informerRetry, true, func(ctx context.Context) (bool, error) {
		inf, last = c.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
		return last == nil, nil
	})
	if err != nil {
		return nil, fmt.Errorf("watching %T %s: %w", obj, obj.GetObjectKind().GroupVersionKind().Kind, errors.Join(err, last))
	}
	return inf, nil
}

// informerRetry is how often an informer the cache could not start is
// asked for again.
const informerRetry = 500 * time.Millisecond

// self maps an object to itself.
func self(_ context.Context, o client.Object) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: client.ObjectKeyFromObject(o)}}
}
