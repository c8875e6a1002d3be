//go:build !lockstep_breaks

package breaks

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestOffInEveryOtherBuild: a build without the tag lockstep_breaks (every
// build but the robustness suite's) never breaks a promise, whatever the
// environment says.
func TestOffInEveryOtherBuild(t *testing.T) {
	t.Setenv(EnvVar, "allow-refused,poll-error-fails,log-credentials")
	for _, b := range All {
		assert.False(t, Active(b), "%s", b)
	}
}
