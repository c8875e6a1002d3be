package executor

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestAtALimit: the failures that name the action's limits are those
// programs report when an allocation or a fork fails; a failure of the
// action's own stays as it said it.
func TestAtALimit(t *testing.T) {
	tests := []struct {
		line string
		want bool
	}{
		{"dd: memory exhausted by input buffer of size 314572800 bytes (300 MiB)", true},
		{"bash: xrealloc: cannot allocate 66711552 bytes", true},
		{"sh: 1: Cannot fork", true},
		{"bash: fork: retry: Resource temporarily unavailable", true},
		{"MemoryError", true},
		{"fatal error: runtime: out of memory", true},
		{"runtime: failed to create new OS thread (have 9 already; errno=11)", true},
		{"java.lang.OutOfMemoryError: Java heap space", true},
		{"xalloc: Cannot allocate memory", true},
		{"the database refuses to drop", false},
		{"", false},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			assert.Equal(t, tt.want, atALimit(tt.line))
		})
	}
}
