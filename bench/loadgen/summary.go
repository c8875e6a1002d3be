package loadgen

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Summary is a run's figures: latency percentiles of the requests that got
// the expected answer, and throughput.
type Summary struct {
	// N is the number of requests with the expected answer.
	N int
	// Errors is the number with another answer.
	Errors int
	// P50, P90 and P99 are latency percentiles (nearest rank); Max is the
	// slowest request.
	P50, P90, P99, Max time.Duration
	// Throughput is requests per second.
	Throughput float64
	// TimedOut is true when the time bound stopped the run early.
	TimedOut bool
}

// Summarize computes a run's summary.
func Summarize(r Result) Summary {
	s := Summary{N: len(r.Latencies), Errors: r.Errors, Throughput: r.Throughput(), TimedOut: r.TimedOut}
	if s.N == 0 {
		return s
	}
	sorted := slices.Clone(r.Latencies)
	slices.Sort(sorted)
	s.P50 = Percentile(sorted, 0.50)
	s.P90 = Percentile(sorted, 0.90)
	s.P99 = Percentile(sorted, 0.99)
	s.Max = sorted[len(sorted)-1]
	return s
}

// Percentile returns the q-quantile (0 < q <= 1) of sorted latencies by
// nearest rank; 0 for none.
func Percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(rank, 0), len(sorted)-1)]
}

// Ratio is a/b; NaN when b is zero (a ratio that cannot be computed is
// shown as such, never as a made-up number).
func Ratio(a, b time.Duration) float64 {
	if b <= 0 {
		return math.NaN()
	}
	return float64(a) / float64(b)
}

// FormatDuration shows a latency in the unit that suits it: µs below a
// millisecond, ms with two decimals below a second, s above.
func FormatDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "0"
	case d < time.Millisecond:
		return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
	case d < time.Second:
		return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.2f s", d.Seconds())
	}
}

// FormatRatio shows a ratio with two decimals followed by "x", or "n/a".
func FormatRatio(r float64) string {
	if math.IsNaN(r) || math.IsInf(r, 0) {
		return "n/a"
	}
	return fmt.Sprintf("%.2fx", r)
}
