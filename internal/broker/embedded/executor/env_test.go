package executor

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestEnvBuilder(t *testing.T) {
	tests := []struct {
		name  string
		key   string
		value string
		want  bool
	}{
		{"a small value", "param_size", "2", true},
		{"an empty value", "param_x", "", true},
		{"the longest value", "param_x", strings.Repeat("x", MaxEnvValue), true},
		{"a value too long", "param_x", strings.Repeat("x", MaxEnvValue+1), false},
		{"a NUL in the value", "param_x", "a\x00b", false},
		{"a NUL in the name", "param_\x00", "v", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := &envBuilder{}
			assert.Equal(t, tt.want, e.add(tt.key, tt.value))
			assert.Equal(t, tt.want, len(e.vars) == 1)
		})
	}
	t.Run("the whole environment stays within its budget", func(t *testing.T) {
		e := &envBuilder{}
		added := 0
		for i := 0; i < 1000; i++ {
			if e.add("param_x", strings.Repeat("x", MaxEnvValue)) {
				added++
			}
		}
		assert.Less(t, added, 1000)
		assert.LessOrEqual(t, e.total, maxEnvTotal)
	})
}

func TestParameterEnv(t *testing.T) {
	params, err := json.Marshal(map[string]any{
		"size": 2, "name": "db", "on": true, "nested": map[string]any{"a": 1}, "list": []int{1}, "none": nil,
		"bad-key": "x", "nul": "a\x00b",
	})
	assert.NoError(t, err)
	got := map[string]string{}
	for _, kv := range parameterEnv(params) {
		got[kv[0]] = kv[1]
	}
	// The NUL value is returned here and left out by envBuilder.
	assert.Equal(t, map[string]string{"param_size": "2", "param_name": "db", "param_on": "true", "param_nul": "a\x00b"}, got)
}
