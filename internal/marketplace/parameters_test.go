package marketplace

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

func TestParameters(t *testing.T) {
	tests := []struct {
		name       string
		schema     string
		createOnly []string
		want       []v1alpha1.PlanParameter
	}{
		{"no schema", ``, nil, nil},
		{"not an object", `["a"]`, nil, nil},
		{"no properties", `{"type":"object"}`, nil, nil},
		{"types, descriptions, allowed values, create-only",
			`{"type":"object","required":["size"],"properties":{
			   "size":{"type":"integer","description":"number of nodes","default":1},
			   "region":{"type":"string","title":"where it runs","enum":["eu", "us"]},
			   "tier":{"type":["string","null"],"const":"gold"},
			   "anything":true}}`,
			[]string{"region"},
			[]v1alpha1.PlanParameter{
				{Name: "anything"},
				{Name: "region", Type: "string", Description: "where it runs", Values: []string{`"eu"`, `"us"`}, CreateOnly: true},
				{Name: "size", Type: "integer", Description: "number of nodes", Required: true, Default: "1"},
				{Name: "tier", Type: "string|null", Values: []string{`"gold"`}},
			}},
		{"a nested create-only part makes its parameter create-only",
			`{"properties":{"storage":{"type":"object"},"store":{"type":"string"},"labels":{"type":"object"}}}`,
			[]string{"labels[app.kubernetes.io/name]", "storage.class"},
			[]v1alpha1.PlanParameter{
				{Name: "labels", Type: "object", CreateOnly: true},
				{Name: "storage", Type: "object", CreateOnly: true},
				{Name: "store", Type: "string"},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Parameters(json.RawMessage(tt.schema), tt.createOnly))
		})
	}
}
