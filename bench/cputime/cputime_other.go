//go:build !unix

package cputime

import "time"

// process is not measured here: benchmarks report ns/op only.
func process() (time.Duration, bool) { return 0, false }
