package faultproxy

import (
	"context"
	"sync"
	"time"
)

// InFlight counts what is under way, by key, for a caller that waits
// until none of some keys is: the proxy's requests by OSB operation, so
// that a stop can let some of them end first.
type InFlight[K comparable] struct {
	mu      sync.Mutex
	n       map[K]int
	changed chan struct{} // closed and replaced whenever a count changes
}

// NewInFlight returns an empty count.
func NewInFlight[K comparable]() *InFlight[K] {
	return &InFlight[K]{n: map[K]int{}, changed: make(chan struct{})}
}

// Start counts one of k under way until done is called.
func (f *InFlight[K]) Start(k K) (done func()) {
	f.mu.Lock()
	f.n[k]++
	f.mu.Unlock()
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.n[k]--
		close(f.changed)
		f.changed = make(chan struct{})
	}
}

// Wait waits until none of keys is under way, for at most timeout or until
// ctx ends; it reports whether none was.
func (f *InFlight[K]) Wait(ctx context.Context, keys []K, timeout time.Duration) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		f.mu.Lock()
		busy := 0
		for _, k := range keys {
			busy += f.n[k]
		}
		changed := f.changed
		f.mu.Unlock()
		if busy == 0 {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-deadline.C:
			return false
		case <-changed:
		}
	}
}
