package reexec_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestImportsOnlyWhatIsSetUpFirst: a package of the standard library that
// a Go program sets up late would set up, before this package's init, the
// packages of the broker's program that come first in initialization
// order: every action would pay for it (tens of milliseconds).
func TestImportsOnlyWhatIsSetUpFirst(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	require.NoError(t, err)
	deps := strings.Fields(string(out))
	for _, late := range []string{"fmt", "reflect", "path/filepath", "os/exec"} {
		assert.NotContains(t, deps, late)
	}
	for _, d := range deps {
		assert.False(t, strings.Contains(d, ".") && !strings.HasSuffix(d, "/executor/reexec"), "%s is not the standard library", d)
	}
}
