//go:build unix

package admission

import (
	"syscall"
	"testing"
	"time"
)

// processCPU is the CPU time the test process has used so far.
func processCPU(tb testing.TB) (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
