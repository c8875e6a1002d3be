package osbclient

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestSnippet(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"empty", "", ""},
		{"short", `{"a": 1}`, `{"a": 1}`},
		{"newlines and tabs become spaces", "a\n\tb\r\n", "a  b"},
		{"control and invalid bytes become ?", "a\x00b\xffc", "a?b?c"},
		{"long is cut", strings.Repeat("x", 500), strings.Repeat("x", maxSnippet) + "…"},
		{"multi-byte runes are not split", strings.Repeat("é", 500), strings.Repeat("é", maxSnippet) + "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, snippet([]byte(tt.in)))
		})
	}
}

func TestTruncate(t *testing.T) {
	assert.Equal(t, "abc", truncate("abc", 3))
	assert.Equal(t, "ab…", truncate("abc", 2))
	assert.Equal(t, "é…", truncate("éé", 3), "never cuts inside a rune")
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{"5", 5 * time.Second},
		{" 5 ", 5 * time.Second},
		{"0", 0},
		{"-3", 0},
		{"1e3", 0},
		{"999999999999", 24 * time.Hour},
		{now.Add(90 * time.Second).Format("Mon, 02 Jan 2006 15:04:05 GMT"), 90 * time.Second},
		{now.Add(-time.Minute).Format("Mon, 02 Jan 2006 15:04:05 GMT"), 0},
		{"tomorrow", 0},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			assert.Equal(t, tt.want, parseRetryAfter(tt.in, now))
		})
	}
}
