package jsonnum

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCanonicalNumber(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"0", "0", true},
		{"-0", "0", true},
		{"0.000", "0", true},
		{"0e10", "0", true},
		{"1", "1e0", true},
		{"1.0", "1e0", true},
		{"10", "1e1", true},
		{"100e-2", "1e0", true},
		{"0.1e1", "1e0", true},
		{"-12.50", "-125e-1", true},
		{"1E+2", "1e2", true},
		{"007", "7e0", true},
		{"123456789012345678901234567890", "12345678901234567890123456789e1", true},
		{"1e007", "1e7", true},
		{"1e0000000006", "1e6", true},
		{"1e1234567890", "", false},
		{"", "", false},
		{"-", "", false},
		{"1.", "", false},
		{".5", "", false},
		{"1e", "", false},
		{"1x", "", false},
	}
	for _, tt := range tests {
		got, ok := Canonical(tt.in)
		assert.Equal(t, tt.ok, ok, tt.in)
		assert.Equal(t, tt.want, got, tt.in)
	}
}

func TestCanonicalNumberRefusesWhatItCannotCompare(t *testing.T) {
	for _, s := range []string{"", "-", "1.", "1e", "1e+", "abc", "1e1234567890123456"} {
		_, ok := Canonical(s)
		assert.False(t, ok, s)
	}
	assert.False(t, Equal("1e1234567890123456", "1e1234567890123457"))
	assert.True(t, Equal("1e1234567890123456", "1e1234567890123456"), "same spelling")
}
