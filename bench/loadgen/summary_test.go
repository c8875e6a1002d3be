package loadgen

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func TestSummarize(t *testing.T) {
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = ms(100 - i) // 100 ms .. 1 ms, unsorted
	}
	tests := []struct {
		name string
		res  Result
		want Summary
	}{
		{name: "nothing measured", res: Result{Errors: 2, FirstError: errors.New("x")}, want: Summary{Errors: 2}},
		{name: "one request", res: Result{Latencies: []time.Duration{ms(7)}, Elapsed: time.Second},
			want: Summary{N: 1, P50: ms(7), P90: ms(7), P99: ms(7), Max: ms(7), Throughput: 1}},
		{name: "a hundred requests, nearest rank", res: Result{Latencies: hundred, Elapsed: 2 * time.Second, TimedOut: true},
			want: Summary{N: 100, P50: ms(50), P90: ms(90), P99: ms(99), Max: ms(100), Throughput: 50, TimedOut: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Summarize(tt.res))
		})
	}
}

func TestRatioAndFormats(t *testing.T) {
	assert.InDelta(t, 1.5, Ratio(ms(3), ms(2)), 1e-9)
	assert.True(t, math.IsNaN(Ratio(ms(3), 0)))
	assert.Equal(t, "n/a", FormatRatio(Ratio(ms(3), 0)))
	assert.Equal(t, "1.50x", FormatRatio(1.5))
	for d, want := range map[time.Duration]string{
		0:                             "0",
		250 * time.Microsecond:        "250 µs",
		ms(12) + 345*time.Microsecond: "12.35 ms",
		1500 * time.Millisecond:       "1.50 s",
	} {
		assert.Equal(t, want, FormatDuration(d))
	}
}

func TestResultMerge(t *testing.T) {
	first := errors.New("first")
	r := Result{Latencies: []time.Duration{ms(1)}, Errors: 1, FirstError: first, Elapsed: time.Second}
	r.Merge(Result{Latencies: []time.Duration{ms(2), ms(3)}, Errors: 2, FirstError: errors.New("second"), Elapsed: time.Second, TimedOut: true})
	assert.Equal(t, []time.Duration{ms(1), ms(2), ms(3)}, r.Latencies)
	assert.Equal(t, 3, r.Errors)
	assert.Equal(t, first, r.FirstError)
	assert.Equal(t, 2*time.Second, r.Elapsed)
	assert.True(t, r.TimedOut)
	assert.InDelta(t, 1.5, r.Throughput(), 1e-9)
}
