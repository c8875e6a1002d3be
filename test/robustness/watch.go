package robustness

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/app"
	"github.com/lockstep-dev/lockstep/test/robustness/check"
)

// watch follows what lockstep writes while the run goes on: every
// version of every operation record (the latest one seen is kept, also
// after the record is deleted, with its namespace say), the events, and
// the status of instances and bindings. What holds a credential marker is
// kept for the checks.
type watch struct {
	cancel  context.CancelFunc
	markers []string

	mu      sync.Mutex
	records map[string]v1alpha1.BrokerOperation
	leaks   []check.Text // what holds a marker
	events  int
}

func startWatch(ctx context.Context, cfg *rest.Config, markers []string) (*watch, error) {
	c, err := cache.New(cfg, cache.Options{Scheme: app.Scheme()})
	if err != nil {
		return nil, fmt.Errorf("a cache to watch lockstep: %w", err)
	}
	w := &watch{markers: markers, records: map[string]v1alpha1.BrokerOperation{}}
	handlers := map[client.Object]func(any){
		&v1alpha1.BrokerOperation{}: w.record,
		&corev1.Event{}:             w.event,
		&v1alpha1.ServiceInstance{}: w.status,
		&v1alpha1.ServiceBinding{}:  w.status,
	}
	for obj, h := range handlers {
		inf, err := c.GetInformer(ctx, obj)
		if err != nil {
			return nil, fmt.Errorf("watching %T: %w", obj, err)
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    h,
			UpdateFunc: func(_, o any) { h(o) },
			DeleteFunc: func(o any) {
				if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
					o = d.Obj
				}
				h(o)
			},
		}); err != nil {
			return nil, err
		}
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	w.cancel = cancel
	go func() { _ = c.Start(runCtx) }()
	syncCtx, done := context.WithTimeout(ctx, time.Minute)
	defer done()
	if !c.WaitForCacheSync(syncCtx) {
		cancel()
		return nil, fmt.Errorf("the watch of lockstep's objects did not sync")
	}
	return w, nil
}

func (w *watch) record(o any) {
	rec, ok := o.(*v1alpha1.BrokerOperation)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.records[rec.Namespace+"/"+rec.Name] = *rec.DeepCopy()
	w.scanLocked("operation record "+rec.Namespace+"/"+rec.Name, rec)
}

func (w *watch) event(o any) {
	ev, ok := o.(*corev1.Event)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.events++
	w.scanLocked(fmt.Sprintf("event %s/%s on %s %s", ev.Namespace, ev.Name, ev.InvolvedObject.Kind, ev.InvolvedObject.Name), ev)
}

func (w *watch) status(o any) {
	var status any
	var what string
	switch obj := o.(type) {
	case *v1alpha1.ServiceInstance:
		status, what = obj.Status, "status of ServiceInstance "+obj.Namespace+"/"+obj.Name
	case *v1alpha1.ServiceBinding:
		status, what = obj.Status, "status of ServiceBinding "+obj.Namespace+"/"+obj.Name
	default:
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.scanLocked(what, status)
}

// scanLocked keeps v's JSON when it holds a credential marker; w.mu must
// be held.
func (w *watch) scanLocked(what string, v any) {
	raw, err := json.Marshal(v)
	if err != nil || !containsAny(string(raw), w.markers) {
		return
	}
	w.leaks = append(w.leaks, check.Text{Source: what, Content: string(raw)})
}

// seen returns the latest version of every record seen.
func (w *watch) seen() map[string]v1alpha1.BrokerOperation {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]v1alpha1.BrokerOperation, len(w.records))
	for k, v := range w.records {
		out[k] = v
	}
	return out
}

// texts returns what held a credential marker, and how many events were
// seen.
func (w *watch) texts() ([]check.Text, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]check.Text(nil), w.leaks...), w.events
}

func (w *watch) stop() { w.cancel() }

// keepText adds what holds a marker to texts.
func keepText(texts []check.Text, source, content string, markers []string) []check.Text {
	if containsAny(content, markers) {
		texts = append(texts, check.Text{Source: source, Content: content})
	}
	return texts
}
