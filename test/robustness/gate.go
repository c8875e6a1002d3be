package robustness

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// gate lets a fault hold back the requests that ask the broker for some
// verbs: it waits until none is in flight and keeps new ones waiting
// until it lets go. A profile uses it to keep a kill away from the
// admissions that would show a known defect.
type gate struct {
	mu       sync.Mutex
	changed  chan struct{} // closed and replaced whenever something changes
	held     []v1alpha1.Verb
	inFlight map[v1alpha1.Verb]int
}

func newGate() *gate {
	return &gate{changed: make(chan struct{}), inFlight: map[v1alpha1.Verb]int{}}
}

func (g *gate) notifyLocked() {
	close(g.changed)
	g.changed = make(chan struct{})
}

// enter waits while verb is held back, then counts a request of it in
// flight; leave ends it.
func (g *gate) enter(ctx context.Context, verb v1alpha1.Verb) {
	for {
		g.mu.Lock()
		if !slices.Contains(g.held, verb) {
			g.inFlight[verb]++
			g.mu.Unlock()
			return
		}
		changed := g.changed
		g.mu.Unlock()
		select {
		case <-ctx.Done():
			g.mu.Lock()
			g.inFlight[verb]++
			g.mu.Unlock()
			return
		case <-changed:
		}
	}
}

func (g *gate) leave(verb v1alpha1.Verb) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.inFlight[verb]--
	g.notifyLocked()
}

// hold keeps new requests of verbs waiting and waits, for at most
// timeout, until none is in flight; it reports whether none was, and
// returns what lets them go again.
func (g *gate) hold(ctx context.Context, verbs []v1alpha1.Verb, timeout time.Duration) (bool, func()) {
	release := func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.held = nil
		g.notifyLocked()
	}
	if len(verbs) == 0 {
		return true, func() {}
	}
	g.mu.Lock()
	g.held = verbs
	g.notifyLocked()
	g.mu.Unlock()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		g.mu.Lock()
		busy := 0
		for _, v := range verbs {
			busy += g.inFlight[v]
		}
		changed := g.changed
		g.mu.Unlock()
		if busy == 0 {
			return true, release
		}
		select {
		case <-ctx.Done():
			return false, release
		case <-deadline.C:
			return false, release
		case <-changed:
		}
	}
}
