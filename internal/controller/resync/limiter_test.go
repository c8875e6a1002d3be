package resync

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLimiterBoundsConcurrentFetchesPerBroker(t *testing.T) {
	l := &Limiter{Concurrent: 2}
	var inFlight, most atomic.Int32
	var wg sync.WaitGroup
	release := make(chan struct{})
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			done, err := l.Acquire(context.Background(), "acme")
			if !assert.NoError(t, err) {
				return
			}
			defer done()
			n := inFlight.Add(1)
			for {
				m := most.Load()
				if n <= m || most.CompareAndSwap(m, n) {
					break
				}
			}
			<-release
			inFlight.Add(-1)
		}()
	}
	require.Eventually(t, func() bool { return inFlight.Load() == 2 }, 5*time.Second, time.Millisecond)

	other, err := l.Acquire(context.Background(), "other")
	require.NoError(t, err, "another broker has slots of its own")
	other()

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = l.Acquire(ctx, "acme")
	assert.ErrorIs(t, err, context.Canceled, "a full broker makes a caller wait until its context ends")

	close(release)
	wg.Wait()
	assert.Equal(t, int32(2), most.Load())
}

func TestLimiterBoundsFetchesPerSecond(t *testing.T) {
	l := &Limiter{Concurrent: 1, PerSecond: 1}
	done, err := l.Acquire(context.Background(), "acme")
	require.NoError(t, err, "the first fetch goes at once")
	done()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = l.Acquire(ctx, "acme")
	assert.Error(t, err, "the second must wait about a second, longer than the caller would")
}
