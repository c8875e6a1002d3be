//go:build !unix

package admission

import (
	"testing"
	"time"
)

// processCPU is not measured here: the benchmarks report ns/op only.
func processCPU(testing.TB) (time.Duration, bool) { return 0, false }
