package framework

import (
	"bytes"
	"strings"
	"sync"
	"testing"
)

// LogBuffer keeps what a process or an in-process lockstep writes, safe
// for concurrent use, for a test to read while it runs.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *LogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestLog is an io.Writer that sends each write, without its trailing
// newline, to a test's log.
type TestLog struct{ T testing.TB }

// Write logs p.
func (w TestLog) Write(p []byte) (int, error) {
	w.T.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
