package robustness

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/test/robustness/faultproxy"
)

// gate lets a fault hold back the requests that ask the broker for some
// verbs: it waits until none is in flight and keeps new ones waiting
// until it lets go. A profile uses it to keep a kill away from the
// admissions that would show a known defect.
type gate struct {
	mu       sync.Mutex
	held     []v1alpha1.Verb
	released chan struct{} // closed when the verbs held are let go
	inFlight *faultproxy.InFlight[v1alpha1.Verb]
}

func newGate() *gate {
	return &gate{released: make(chan struct{}), inFlight: faultproxy.NewInFlight[v1alpha1.Verb]()}
}

// enter waits while verb is held back, then counts a request of it in
// flight until leave is called.
func (g *gate) enter(ctx context.Context, verb v1alpha1.Verb) (leave func()) {
	for {
		g.mu.Lock()
		if !slices.Contains(g.held, verb) || ctx.Err() != nil {
			leave = g.inFlight.Start(verb)
			g.mu.Unlock()
			return leave
		}
		released := g.released
		g.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-released:
		}
	}
}

// hold keeps new requests of verbs waiting and waits, for at most
// timeout, until none is in flight; it reports whether none was, and
// returns what lets them go again.
func (g *gate) hold(ctx context.Context, verbs []v1alpha1.Verb, timeout time.Duration) (bool, func()) {
	if len(verbs) == 0 {
		return true, func() {}
	}
	g.mu.Lock()
	g.held, g.released = verbs, make(chan struct{})
	released := g.released
	g.mu.Unlock()
	release := func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.held = nil
		close(released)
	}
	return g.inFlight.Wait(ctx, verbs, timeout), release
}
