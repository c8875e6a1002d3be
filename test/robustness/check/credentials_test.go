package check

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCredentials(t *testing.T) {
	got := Credentials(Snapshot{
		Credentials: []string{"SECRET-"},
		Texts: []Text{
			{Source: "log of replica a", Content: "line one\nwrote credentials password=SECRET-abc to x\nline three SECRET-def\n"},
			{Source: "events", Content: "nothing here"},
			{Source: "metrics", Content: strings.Repeat("x", 1000) + "SECRET-1" + strings.Repeat("y", 1000)},
		},
	})
	if assert.Len(t, got, 2) {
		assert.Equal(t, NoCredentials, got[0].Invariant)
		assert.Equal(t, "log of replica a", got[0].Object)
		assert.Equal(t, `a credential ("SECRET-"...) appears 2 time(s), first in: wrote credentials password=SECRET-abc to x`, got[0].Message)
		assert.Equal(t, "metrics", got[1].Object)
		assert.Less(t, len(got[1].Message), 500, "a long line is cut")
	}
}
