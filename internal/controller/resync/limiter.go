package resync

import (
	"context"
	"sync"

	"golang.org/x/time/rate"
)

// Limiter bounds the fetches resync makes at each broker: at most
// Concurrent at once and PerSecond a second (bursts of up to Concurrent),
// so that a resync of thousands of objects never floods a broker.
type Limiter struct {
	Concurrent int
	PerSecond  float64

	mu      sync.Mutex
	brokers map[string]*brokerLimit
}

type brokerLimit struct {
	slots chan struct{}
	rate  *rate.Limiter
}

// Acquire waits until broker may take one more fetch; the returned
// function gives the slot back. It fails only when ctx ends first.
func (l *Limiter) Acquire(ctx context.Context, broker string) (func(), error) {
	b := l.of(broker)
	select {
	case b.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if err := b.rate.Wait(ctx); err != nil {
		<-b.slots
		return nil, err
	}
	return func() { <-b.slots }, nil
}

func (l *Limiter) of(broker string) *brokerLimit {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.brokers == nil {
		l.brokers = map[string]*brokerLimit{}
	}
	b, ok := l.brokers[broker]
	if !ok {
		concurrent := max(l.Concurrent, 1)
		perSecond := rate.Limit(l.PerSecond)
		if l.PerSecond <= 0 {
			perSecond = rate.Inf
		}
		b = &brokerLimit{slots: make(chan struct{}, concurrent), rate: rate.NewLimiter(perSecond, concurrent)}
		l.brokers[broker] = b
	}
	return b
}
