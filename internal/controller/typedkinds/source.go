package typedkinds

import (
	"context"
	"fmt"

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
		inf, err := c.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
		if err != nil {
			return fmt.Errorf("watching %T: %w", obj, err)
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
			return fmt.Errorf("watching %T: %w", obj, err)
		}
		go func() {
			<-ctx.Done()
			_ = inf.RemoveEventHandler(reg)
		}()
		toolscache.WaitForCacheSync(ctx.Done(), reg.HasSynced)
		return nil
	})
}

// self maps an object to itself.
func self(_ context.Context, o client.Object) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: client.ObjectKeyFromObject(o)}}
}
