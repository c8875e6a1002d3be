package journal

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// Confirmed remembers the objects whose deprovision or unbind the broker
// confirmed during admission, so that the finalizer can be removed without
// asking the broker a second time. It is only a shortcut: after a restart it
// is empty, and the finalizer path asks the broker, which answers 410 Gone.
type Confirmed struct {
	mu   sync.Mutex
	uids map[types.UID]struct{}
}

// NewConfirmed returns an empty set.
func NewConfirmed() *Confirmed { return &Confirmed{uids: map[types.UID]struct{}{}} }

// Add records that the broker confirmed the delete of uid.
func (c *Confirmed) Add(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.uids[uid] = struct{}{}
}

// Take reports whether the delete of uid was confirmed, and forgets it.
func (c *Confirmed) Take(uid types.UID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.uids[uid]
	delete(c.uids, uid)
	return ok
}
