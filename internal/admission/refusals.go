package admission

import (
	"sync"
	"time"

	"github.com/lockstep-dev/lockstep/internal/journal"
)

// refusals remembers the broker's refusals for a moment. The API server
// may ask the webhooks twice for one request (it retries an update or a
// delete whose cached state was stale); the retry gets the same answer
// instead of a second broker call. The window is short so that a person
// retrying after the broker recovered is not answered from memory.
type refusals struct {
	mu     sync.Mutex
	window time.Duration
	seen   map[journal.Change]refusal
	now    func() time.Time
}

type refusal struct {
	err error
	at  time.Time
}

// maxRefusals bounds the memory; old entries are dropped first.
const maxRefusals = 1024

func newRefusals(window time.Duration) *refusals {
	return &refusals{window: window, seen: map[journal.Change]refusal{}, now: time.Now}
}

// get returns the refusal of the same change within the window.
func (r *refusals) get(k journal.Change) error {
	if k.UID == "" {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if f, ok := r.seen[k]; ok && r.now().Sub(f.at) < r.window {
		return f.err
	}
	return nil
}

// put remembers a refusal.
func (r *refusals) put(k journal.Change, err error) {
	if k.UID == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	if len(r.seen) >= maxRefusals {
		for key, f := range r.seen {
			if now.Sub(f.at) >= r.window {
				delete(r.seen, key)
			}
		}
		if len(r.seen) >= maxRefusals {
			r.seen = map[journal.Change]refusal{}
		}
	}
	r.seen[k] = refusal{err: err, at: now}
}
