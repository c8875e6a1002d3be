package robustness

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/test/robustness/history"
)

// namespacePrefix begins the name of every namespace a run makes.
const namespacePrefix = "rb-"

// traffic is what the clients share: the namespaces, the history, the
// values parameters from Secrets had, and what was let go at a broker
// (which an adoption takes back).
type traffic struct {
	env  *env
	hist *history.History

	mu          sync.Mutex
	namespaces  []string // live ones
	nsSeq       int
	deleted     []string // namespaces deleted by a client
	fromSecrets map[string]map[string][]any
	released    []released
	// operator is the person who follows the ways out (client 0).
	operator *actor
	gate     *gate
}

// released is an instance a delete left at its broker.
type released struct {
	broker, plan, id string
	parameters       map[string]any
}

// actor is one client: its own random choices, its own objects.
type actor struct {
	id   int
	t    *traffic
	rng  *rand.Rand
	seq  int
	objs []objectRef
}

// objectRef is an object a client made.
type objectRef struct {
	kind      string // "instance" or "binding"
	namespace string
	name      string
}

// run sends requests until ctx ends.
func (t *traffic) run(ctx context.Context, clients int) {
	var wg sync.WaitGroup
	for i := range clients {
		c := &actor{id: i + 1, t: t, rng: rng(t.env.opts.Seed, fmt.Sprintf("client %d", i+1))}
		wg.Go(func() { c.loop(ctx) })
	}
	wg.Wait()
}

// setup makes the first namespaces.
func (t *traffic) setup(ctx context.Context, n int) error {
	t.fromSecrets = map[string]map[string][]any{}
	t.operator = &actor{id: 0, t: t, rng: rng(t.env.opts.Seed, "operator")}
	for range n {
		if _, err := t.newNamespace(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (t *traffic) newNamespace(ctx context.Context) (string, error) {
	t.mu.Lock()
	t.nsSeq++
	name := fmt.Sprintf("%s%d", namespacePrefix, t.nsSeq)
	t.mu.Unlock()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	var err error
	for range 60 { // the API server may be down for a moment
		if err = t.env.admin.Create(ctx, ns); err == nil || apierrors.IsAlreadyExists(err) {
			t.mu.Lock()
			t.namespaces = append(t.namespaces, name)
			t.mu.Unlock()
			return name, nil
		}
		if !sleep(ctx, time.Second) {
			break
		}
	}
	return "", fmt.Errorf("creating namespace %s: %w", name, err)
}

func (t *traffic) pickNamespace(r *rand.Rand) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.namespaces) == 0 {
		return ""
	}
	return t.namespaces[r.IntN(len(t.namespaces))]
}

func (t *traffic) liveNamespace(ns string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Contains(t.namespaces, ns)
}

// op is one kind of operation with its weight in the mix.
type op struct {
	kind   history.Kind
	weight int
	do     func(c *actor, ctx context.Context) bool // false: nothing to do it on
}

// mix is what clients do, and how often.
var mix = []op{
	{history.CreateInstance, 16, (*actor).createInstance},
	{history.UpdateParameters, 14, (*actor).updateParameters},
	{history.ChangePlan, 6, (*actor).changePlan},
	{history.UpdateFromSecret, 4, (*actor).updateFromSecret},
	{history.Bind, 12, (*actor).bind},
	{history.Unbind, 7, (*actor).unbind},
	{history.DeleteInstance, 8, (*actor).deleteInstance},
	{history.DeleteNamespace, 1, (*actor).deleteNamespace},
	{history.SetPolicy, 6, (*actor).setPolicy},
	{history.Adopt, 4, (*actor).adopt},
	{history.DryRun, 6, (*actor).dryRun},
	{history.ConflictingEdit, 4, (*actor).conflictingEdit},
}

func (c *actor) loop(ctx context.Context) {
	total := 0
	for _, o := range mix {
		total += o.weight
	}
	for ctx.Err() == nil {
		n := c.rng.IntN(total)
		for _, o := range mix {
			if n -= o.weight; n < 0 {
				if !o.do(c, ctx) {
					// nothing to do it on: make something instead
					c.createInstance(ctx)
				}
				break
			}
		}
		sleep(ctx, time.Duration(100+c.rng.IntN(400))*time.Millisecond)
	}
}

// request records a request as a user of its own, makes it, and records
// its answer.
func (c *actor) request(ctx context.Context, r *history.Request, do func(ctx context.Context) error) *history.Request {
	c.seq++
	r.Client, r.User = c.id, fmt.Sprintf("rb-client%d-r%d", c.id, c.seq)
	defer c.t.gate.enter(ctx, r.Verb)()
	c.t.hist.Begin(r)
	w := &warnings{}
	rctx, cancel := context.WithTimeout(as(ctx, r.User, w), time.Minute)
	defer cancel()
	err := do(rctx)
	c.t.hist.End(r, err, w.all())
	if err != nil && r.Answer == history.Failed && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
		sleep(ctx, time.Duration(200+c.rng.IntN(600))*time.Millisecond) // the API server or the webhook may be down
	}
	return r
}

// pick returns one of the client's objects of kind, read from the API
// server; nil when it has none.
func (c *actor) pick(ctx context.Context, kind string) client.Object {
	for range 3 {
		var idx []int
		for i, o := range c.objs {
			if o.kind == kind {
				idx = append(idx, i)
			}
		}
		if len(idx) == 0 {
			return nil
		}
		i := idx[c.rng.IntN(len(idx))]
		ref := c.objs[i]
		var obj client.Object = &v1alpha1.ServiceInstance{}
		if kind == "binding" {
			obj = &v1alpha1.ServiceBinding{}
		}
		err := c.t.env.admin.Get(ctx, client.ObjectKey{Namespace: ref.namespace, Name: ref.name}, obj)
		switch {
		case err == nil && obj.GetDeletionTimestamp() == nil:
			return obj
		case apierrors.IsNotFound(err) || err == nil:
			if err != nil || !c.t.liveNamespace(ref.namespace) {
				c.objs = slices.Delete(c.objs, i, i+1)
			}
		default:
			return nil // the API server is unreachable: try later
		}
	}
	return nil
}
