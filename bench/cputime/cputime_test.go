package cputime

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestUsedGrowsWithWork(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" {
		t.Skip("CPU time is read on unix only")
	}
	before, ok := Used()
	assert.True(t, ok)
	x := 0
	for i := range 50_000_000 {
		x ^= i
	}
	after, _ := Used()
	assert.Greater(t, after, before, "CPU time grows (%d)", x)
}

func BenchmarkStartReportsCPUPerOp(b *testing.B) {
	stop := Start(b)
	for b.Loop() {
		runtime.Gosched()
	}
	stop()
}
