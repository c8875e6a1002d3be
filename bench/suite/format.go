package suite

import (
	"fmt"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/bench/loadgen"
)

// Helpers that turn measurements into table cells.

func dur(d time.Duration) string { return loadgen.FormatDuration(d) }

func ratio(a, b time.Duration) string { return loadgen.FormatRatio(loadgen.Ratio(a, b)) }

func rate(perSecond float64) string {
	switch {
	case perSecond >= 100:
		return fmt.Sprintf("%.0f/s", perSecond)
	case perSecond > 0:
		return fmt.Sprintf("%.1f/s", perSecond)
	default:
		return "0/s"
	}
}

func mib(bytes int64) string { return fmt.Sprintf("%.1f MiB", float64(bytes)/(1<<20)) }

// problems describes unexpected answers and cut-short runs of summaries,
// "none" when there were none.
func problems(results ...loadgen.Result) string {
	var out []string
	for _, r := range results {
		if r.Errors > 0 {
			out = append(out, fmt.Sprintf("%d unexpected (%v)", r.Errors, r.FirstError))
		}
		if r.TimedOut {
			out = append(out, "stopped by the time bound")
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, "; ")
}

// clean reports whether runs had no unexpected answer and finished.
func clean(results ...loadgen.Result) bool {
	for _, r := range results {
		if r.Errors > 0 || r.TimedOut {
			return false
		}
	}
	return true
}
