package admission

import (
	"time"

	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/utils/clock"

	"github.com/lockstep-dev/lockstep/internal/journal"
)

// refusals remembers the broker's refusals for a moment. The API server
// may ask the webhooks twice for one request (it retries an update or a
// delete whose cached state was stale); the retry gets the same answer
// instead of a second broker call. The window is short so that a person
// retrying after the broker recovered is not answered from memory.
type refusals struct {
	window time.Duration
	seen   *cache.LRUExpireCache
}

// maxRefusals bounds the memory; the least recently used go first.
const maxRefusals = 1024

func newRefusals(window time.Duration) *refusals {
	return newRefusalsWithClock(window, clock.RealClock{})
}

func newRefusalsWithClock(window time.Duration, c clock.PassiveClock) *refusals {
	return &refusals{window: window, seen: cache.NewLRUExpireCacheWithClock(maxRefusals, c)}
}

// get returns the refusal of the same change within the window.
func (r *refusals) get(k journal.Change) error {
	if k.UID == "" {
		return nil
	}
	if err, ok := r.seen.Get(k); ok {
		return err.(error)
	}
	return nil
}

// put remembers a refusal for the window.
func (r *refusals) put(k journal.Change, err error) {
	if k.UID == "" || r.window <= 0 {
		return
	}
	r.seen.Add(k, err, r.window)
}
