//go:build lockstep_breaks

package breaks

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestOnWhenNamed(t *testing.T) {
	t.Setenv(EnvVar, " poll-error-fails , unknown")
	assert.True(t, Active(PollErrorFails))
	assert.False(t, Active(AllowRefused))
}
