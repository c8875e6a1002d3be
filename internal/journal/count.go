package journal

import (
	"context"
	"sync"

	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// Write is one API server write: the kind of object and the verb (create,
// update, patch, delete).
type Write struct {
	Kind string
	Verb string
}

// counting is a client that notes every write it sends, so that Run can
// tell how many API server writes an operation waited for.
type counting struct {
	client.Client
	mu     sync.Mutex
	writes []Write
}

func (c *counting) note(obj client.Object, verb string) {
	kind := "Object"
	switch obj.(type) {
	case *coordinationv1.Lease:
		kind = "Lease"
	case *v1alpha1.BrokerOperation:
		kind = "BrokerOperation"
	}
	c.mu.Lock()
	c.writes = append(c.writes, Write{Kind: kind, Verb: verb})
	c.mu.Unlock()
}

func (c *counting) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	c.note(obj, "create")
	return c.Client.Create(ctx, obj, opts...)
}

func (c *counting) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	c.note(obj, "update")
	return c.Client.Update(ctx, obj, opts...)
}

func (c *counting) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	c.note(obj, "patch")
	return c.Client.Patch(ctx, obj, patch, opts...)
}

func (c *counting) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	c.note(obj, "delete")
	return c.Client.Delete(ctx, obj, opts...)
}

// taken returns the writes noted so far.
func (c *counting) taken() []Write {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Write(nil), c.writes...)
}
