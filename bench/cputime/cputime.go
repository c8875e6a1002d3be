package cputime

import (
	"testing"
	"time"
)

// Start reads the process's CPU time; the function it returns reports the
// CPU time per operation since then as the metric cpu-ns/op (garbage
// collection included). Where the CPU time cannot be read it reports
// nothing.
func Start(b *testing.B) (stop func()) {
	start, ok := process()
	return func() {
		if end, ok2 := process(); ok && ok2 && b.N > 0 {
			b.ReportMetric(float64(end-start)/float64(b.N), "cpu-ns/op")
		}
	}
}

// Used is the CPU time the process has used so far; false where it cannot
// be read.
func Used() (time.Duration, bool) { return process() }
