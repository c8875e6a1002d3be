package loadgen

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRun(t *testing.T) {
	failOdd := func(_ context.Context, i int) error {
		if i%2 == 1 {
			return errors.New("odd")
		}
		return nil
	}
	tests := []struct {
		name          string
		load          Load
		first         int
		do            Do
		after         Do
		wantCompleted int
		wantErrors    int
		wantTimedOut  bool
		wantErr       string
	}{
		{name: "every request once", load: Load{Concurrency: 4, Requests: 20, MaxDuration: time.Minute},
			do: func(context.Context, int) error { return nil }, wantCompleted: 20},
		{name: "unexpected answers are errors, not latencies", load: Load{Concurrency: 3, Requests: 10, MaxDuration: time.Minute},
			do: failOdd, wantCompleted: 5, wantErrors: 5},
		{name: "indexes start at first", load: Load{Concurrency: 1, Requests: 4, MaxDuration: time.Minute}, first: 1,
			do: failOdd, wantCompleted: 2, wantErrors: 2},
		{name: "after runs untimed and its errors count", load: Load{Concurrency: 2, Requests: 10, MaxDuration: time.Minute},
			do: func(context.Context, int) error { return nil }, after: failOdd, wantCompleted: 5, wantErrors: 5},
		{name: "after does not run when do failed", load: Load{Concurrency: 1, Requests: 4, MaxDuration: time.Minute},
			do: failOdd, after: func(_ context.Context, i int) error {
				if i%2 == 1 {
					panic("after ran for a failed request")
				}
				return nil
			}, wantCompleted: 2, wantErrors: 2},
		{name: "zero requests", load: Load{Concurrency: 2, Requests: 0, MaxDuration: time.Minute},
			do: func(context.Context, int) error { return nil }},
		{name: "the time bound stops a run and cut requests are not errors",
			load: Load{Concurrency: 2, Requests: 1000, MaxDuration: 20 * time.Millisecond},
			do: func(ctx context.Context, _ int) error {
				<-ctx.Done()
				return ctx.Err()
			}, wantTimedOut: true},
		{name: "no workers", load: Load{Concurrency: 0, Requests: 1, MaxDuration: time.Second}, wantErr: "concurrency 0"},
		{name: "no time bound", load: Load{Concurrency: 1, Requests: 1}, wantErr: "must be more than 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Run(context.Background(), tt.load, tt.first, Work{Do: tt.do, After: tt.after})
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantCompleted, res.Completed())
			assert.Equal(t, tt.wantErrors, res.Errors)
			assert.Equal(t, tt.wantTimedOut, res.TimedOut)
			if tt.wantErrors > 0 {
				require.Error(t, res.FirstError)
				assert.Contains(t, res.FirstError.Error(), "odd")
			}
		})
	}
}

func TestRunSendsEachIndexOnceAtTheConcurrencyAsked(t *testing.T) {
	var (
		mu      sync.Mutex
		seen    = map[int]int{}
		running atomic.Int32
		peak    atomic.Int32
		release = make(chan struct{})
		once    sync.Once
	)
	do := func(_ context.Context, i int) error {
		n := running.Add(1)
		defer running.Add(-1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		if n == 4 {
			once.Do(func() { close(release) })
		}
		select {
		case <-release:
		case <-time.After(5 * time.Second):
		}
		mu.Lock()
		seen[i]++
		mu.Unlock()
		return nil
	}
	res, err := Run(context.Background(), Load{Concurrency: 4, Requests: 40, MaxDuration: time.Minute}, 100, Work{Do: do})
	require.NoError(t, err)
	assert.Equal(t, 40, res.Completed())
	assert.Equal(t, int32(4), peak.Load())
	require.Len(t, seen, 40)
	for i := 100; i < 140; i++ {
		assert.Equal(t, 1, seen[i], "index %d", i)
	}
}

func TestRunStopsWhenTheCallerCancels(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var calls atomic.Int32
	_, err := Run(ctx, Load{Concurrency: 1, Requests: 100, MaxDuration: time.Minute}, 0, Work{Do: func(context.Context, int) error {
		if calls.Add(1) == 3 {
			cancel()
		}
		return nil
	}})
	require.Error(t, err)
	assert.ErrorIs(t, err, context.Canceled)
	assert.LessOrEqual(t, calls.Load(), int32(4))
}
