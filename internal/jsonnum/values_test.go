package jsonnum

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestValuesEqual(t *testing.T) {
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
			a, b := decode(t, tt.a), decode(t, tt.b)
			assert.Equal(t, tt.want, ValuesEqual(a, b))
			assert.Equal(t, tt.want, ValuesEqual(b, a), "symmetric")
		})
	}
}

func decode(t *testing.T, s string) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader([]byte(s)))
	d.UseNumber()
	var v any
	require.NoError(t, d.Decode(&v))
	return v
}
