package loadgen

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBackoffDelay(t *testing.T) {
	b := Backoff{Initial: time.Second, Max: 8 * time.Second, Factor: 2}
	for retry, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 4: 8 * time.Second, 9: 8 * time.Second} {
		assert.Equal(t, want, b.Delay(retry, nil), "retry %d", retry)
	}
	b.Jitter = 0.25
	rnd := rand.New(rand.NewPCG(1, 2))
	for range 100 {
		d := b.Delay(2, rnd)
		assert.GreaterOrEqual(t, d, 1500*time.Millisecond)
		assert.LessOrEqual(t, d, 2500*time.Millisecond)
	}
}

func TestBurst(t *testing.T) {
	quick := Backoff{Initial: time.Millisecond, Max: 4 * time.Millisecond, Factor: 2, Jitter: 0.2}
	refused := errors.New("refused")
	tests := []struct {
		name string
		load BurstLoad
		// refusals is how many times item i is refused before it is done
		// (-1: always).
		refusals     func(i int) int
		wantDone     int
		wantTotal    map[string]int
		wantMost     map[string]int
		wantTimedOut bool
	}{
		{
			name: "every item at the first try", load: BurstLoad{Clients: 4, Items: 20, MaxAttempts: 5, MaxDuration: time.Minute, Backoff: quick},
			refusals: func(int) int { return 0 }, wantDone: 20, wantTotal: map[string]int{}, wantMost: map[string]int{},
		},
		{
			name: "odd items refused twice, then done", load: BurstLoad{Clients: 3, Items: 10, MaxAttempts: 5, MaxDuration: time.Minute, Backoff: quick},
			refusals: func(i int) int { return 2 * (i % 2) }, wantDone: 10,
			wantTotal: map[string]int{"refused": 10}, wantMost: map[string]int{"refused": 2},
		},
		{
			name: "an item out of tries is left not done", load: BurstLoad{Clients: 2, Items: 4, MaxAttempts: 3, MaxDuration: time.Minute, Backoff: quick},
			refusals: func(i int) int { return map[bool]int{true: -1, false: 0}[i == 3] }, wantDone: 3,
			wantTotal: map[string]int{"refused": 3}, wantMost: map[string]int{"refused": 3},
		},
		{
			name:     "the time bound ends a burst that never finishes",
			load:     BurstLoad{Clients: 2, Items: 2, MaxAttempts: 1 << 20, MaxDuration: 200 * time.Millisecond, Backoff: quick},
			refusals: func(i int) int { return map[bool]int{true: -1, false: 0}[i == 1] }, wantDone: 1, wantTimedOut: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var (
				mu    sync.Mutex
				tries = map[int]int{}
			)
			do := func(_ context.Context, i int) error {
				mu.Lock()
				defer mu.Unlock()
				tries[i]++
				if n := tt.refusals(i); n < 0 || tries[i] <= n {
					return refused
				}
				return nil
			}
			res, err := Burst(context.Background(), tt.load, do, func(err error) string { return err.Error() })
			require.NoError(t, err)
			require.Len(t, res.Items, tt.load.Items)
			assert.Equal(t, tt.wantDone, res.Done())
			assert.Equal(t, tt.wantTimedOut, res.TimedOut)
			total, most := res.Refusals()
			if tt.wantTotal != nil {
				assert.Equal(t, tt.wantTotal, total)
				assert.Equal(t, tt.wantMost, most)
			}
			for i, o := range res.Items {
				assert.Equal(t, tries[i], o.Tries(), "item %d: every try is counted", i)
				if o.Done {
					assert.LessOrEqual(t, o.At, res.Last())
				}
			}
		})
	}
}

func TestBurstRejects(t *testing.T) {
	do := func(context.Context, int) error { return nil }
	classify := func(error) string { return "" }
	b := Backoff{Initial: time.Millisecond, Max: time.Millisecond, Factor: 1}
	for _, l := range []BurstLoad{
		{Clients: 0, Items: 1, MaxAttempts: 1, MaxDuration: time.Second, Backoff: b},
		{Clients: 1, Items: 1, MaxAttempts: 0, MaxDuration: time.Second, Backoff: b},
		{Clients: 1, Items: 1, MaxAttempts: 1, Backoff: b},
		{Clients: 1, Items: 1, MaxAttempts: 1, MaxDuration: time.Second},
	} {
		_, err := Burst(context.Background(), l, do, classify)
		assert.Error(t, err, "%+v", l)
	}
}
