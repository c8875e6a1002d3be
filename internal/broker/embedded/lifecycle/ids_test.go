package lifecycle

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckID(t *testing.T) {
	tests := []struct {
		name    string
		id      string
		wantErr string
	}{
		{"a GUID", "4f6a3c1e-6b0e-4a55-9d7e-1c2b3a4d5e01", ""},
		{"every unreserved character", "aZ09-._~", ""},
		{"the longest", strings.Repeat("a", MaxIDLength), ""},
		{"empty", "", "instance_id is required"},
		{"too long", strings.Repeat("a", MaxIDLength+1), "256 characters long; at most 255"},
		{"a NUL", "a\x00b", "byte 0x00"},
		{"a slash", "ns/name", `"/"`},
		{"a colon", "ns:name", `":"`},
		{"a space", "a b", `" "`},
		{"a newline", "a\nb", "byte 0x0a"},
		{"non-ASCII", "café", "byte 0xc3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkID("instance_id", tt.id)
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, BadRequest, e.Kind)
			assert.Contains(t, e.Description, tt.wantErr)
		})
	}
}
