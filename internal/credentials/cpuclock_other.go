//go:build !linux

package credentials

import "time"

// threadCPU is, where the thread's CPU time cannot be read, the time
// that passed.
func threadCPU() time.Duration { return monotonic() }
