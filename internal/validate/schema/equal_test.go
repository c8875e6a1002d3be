package schema

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestJSONEqual(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{`1`, `1.0`, true},
		{`1`, `10e-1`, true},
		{`0.1e1`, `1`, true},
		{`100`, `1e2`, true},
		{`-0`, `0`, true},
		{`0.0`, `0e10`, true},
		{`1`, `1.0000000000000000000001`, false},
		{`12345678901234567890`, `12345678901234567891`, false},
		{`1e999999999`, `10e999999998`, true},
		{`1`, `-1`, false},
		{`1`, `"1"`, false},
		{`"a"`, `"a"`, true},
		{`null`, `null`, true},
		{`null`, `false`, false},
		{`true`, `true`, true},
		{`{"a": 1, "b": [1, 2]}`, `{"b": [1.0, 2], "a": 1}`, true},
		{`{"a": 1}`, `{"a": 1, "b": null}`, false},
		{`[1, 2]`, `[2, 1]`, false},
		{`[]`, `{}`, false},
		{`{"a": {"b": "c"}}`, `{"a": {"b": "d"}}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.a+" vs "+tt.b, func(t *testing.T) {
			a, _, err := decodeJSON([]byte(tt.a))
			assert.NoError(t, err)
			b, _, err := decodeJSON([]byte(tt.b))
			assert.NoError(t, err)
			assert.Equal(t, tt.want, jsonEqual(a, b))
			assert.Equal(t, tt.want, jsonEqual(b, a), "symmetric")
		})
	}
}
