package marketplace

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestConstraints(t *testing.T) {
	tests := []struct {
		name, schema string
		want         map[string]string
	}{
		{"no schema", ``, nil},
		{"none", `{"properties":{"a":{"type":"string"},"b":true}}`, map[string]string{}},
		{"numbers", `{"properties":{
			"size":{"type":"integer","minimum":1,"maximum":10},
			"low":{"type":"integer","minimum":0},
			"ratio":{"type":"number","exclusiveMinimum":0,"maximum":1},
			"old":{"type":"number","minimum":0,"exclusiveMinimum":true,"maximum":5,"exclusiveMaximum":true},
			"step":{"type":"integer","multipleOf":5,"maximum":100}}}`,
			map[string]string{"size": "1 to 10", "low": "at least 0", "ratio": "more than 0, at most 1", "old": "more than 0, less than 5",
				"step": "at most 100, a multiple of 5"}},
		{"strings", `{"properties":{
			"password":{"type":"string","minLength":8},
			"code":{"type":"string","minLength":2,"maxLength":2,"pattern":"^[A-Z]+$"},
			"id":{"type":"string","format":"uuid","maxLength":36}}}`,
			map[string]string{"password": "at least 8 characters", "code": "2 characters, matches ^[A-Z]+$", "id": "at most 36 characters, format uuid"}},
		{"arrays and objects", `{"properties":{
			"tags":{"type":"array","items":{"type":"string"},"maxItems":16,"uniqueItems":true},
			"zones":{"type":"array","minItems":1},
			"labels":{"type":"object","maxProperties":10}}}`,
			map[string]string{"tags": "at most 16 items, items of type string, no item twice", "zones": "at least 1 item", "labels": "at most 10 members"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Constraints(json.RawMessage(tt.schema)))
		})
	}
}
