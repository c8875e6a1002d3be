package render

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
)

// plan is a plan with a create and (when not empty) an update schema.
func plan(name, create, update string) osbapi.Plan {
	s := &osbapi.ServiceInstanceSchemas{Create: &osbapi.InputParameters{Parameters: json.RawMessage(create)}}
	if update != "" {
		s.Update = &osbapi.InputParameters{Parameters: json.RawMessage(update)}
	}
	return osbapi.Plan{ID: name + "-id", Name: name, Schemas: &osbapi.Schemas{ServiceInstance: s}}
}

// TestRequired: the CRD requires what every plan requires at creation and
// no update may remove; what only some plans require, what is sensitive,
// and what an update may remove are described and reported instead.
func TestRequired(t *testing.T) {
	const props = `"version":{"type":"string"},"engine":{"type":"string"},"size":{"type":"integer"},"password":{"type":"string","writeOnly":true},"backup":{"type":"object","required":["window"],"properties":{"window":{"type":"string"}}}`
	svc := &osbapi.Service{ID: "s", Name: "pg", Plans: []osbapi.Plan{
		// version is create-only in a and required on update in b.
		plan("a", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","required":["version","engine","size","password","backup"],"properties":{`+props+`}}`,
			`{"type":"object","properties":{"size":{"type":"integer"},"password":{"type":"string"},"backup":{"type":"object","properties":{"window":{"type":"string"}}}}}`),
		plan("b", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","required":["version","size","password","backup"],"properties":{`+props+`}}`,
			`{"type":"object","required":["version","backup"],"properties":{"version":{"type":"string"},"size":{"type":"integer"},"backup":{"type":"object","required":["window"],"properties":{"window":{"type":"string"}}}}}`),
	}}
	crd, report, err := Render("acme", svc, Options{})
	require.NoError(t, err)
	params := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["parameters"]
	assert.Equal(t, []string{"version"}, params.Required, "every plan requires it at creation, and no update removes it")
	assert.Equal(t, "Required at creation.", params.Properties["backup"].Description, "plan a's update may remove backup")
	assert.Nil(t, params.Properties["backup"].Required, "plan a's update may remove backup.window")
	assert.Equal(t, "Required at creation by plan(s) a.", params.Properties["engine"].Description)
	assert.Equal(t, "Required at creation.", params.Properties["size"].Description)
	assert.Contains(t, params.Properties["password"].Description, "Required at creation, from a Secret.")
	assert.Equal(t, "Required at creation.", params.Properties["backup"].Properties["window"].Description)

	why := map[string]string{}
	for _, d := range report.Dropped {
		if d.Keyword == "required" {
			why[d.Where] = d.Why
		}
	}
	assert.Contains(t, why["spec.parameters.engine"], "only plan(s) a require it at creation")
	assert.Contains(t, why["spec.parameters.size"], "an update may remove it")
	assert.Contains(t, why["spec.parameters.password"], "it is sensitive")
	assert.Contains(t, why["spec.parameters.backup.window"], "an update may remove it")
	assert.Contains(t, why["spec.parameters.backup"], "an update may remove it")
	assert.Len(t, why, 5)
	assert.Empty(t, Validate(crd))
}

func TestUnrequire(t *testing.T) {
	params := &apiextensionsv1.JSONSchemaProps{Type: "object", Required: []string{"version", "size"}, Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"version": {Type: "string", Description: "Version."},
		"size":    {Type: "integer"},
		"nodes": {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{
			Type: "object", Required: []string{"zone"}, Properties: map[string]apiextensionsv1.JSONSchemaProps{"zone": {Type: "string"}}}}},
	}}
	for _, tc := range []struct {
		name     string
		values   []any
		required []string
		paths    []string
	}{
		{"every object has them", []any{map[string]any{"version": "1", "size": 1, "nodes": []any{map[string]any{"zone": "a"}}}}, []string{"version", "size"}, []string{}},
		{"an object lacks one", []any{map[string]any{"version": "1", "size": 1}, map[string]any{"size": 2}}, []string{"size"}, []string{"version"}},
		{"an object without parameters lacks every one", []any{nil}, nil, []string{"size", "version"}},
		{"an array's object lacks one", []any{map[string]any{"version": "1", "size": 1, "nodes": []any{map[string]any{"zone": "a"}, map[string]any{}}}}, []string{"version", "size"}, []string{"nodes[*].zone"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, paths := Unrequire(params, tc.values)
			assert.Equal(t, tc.paths, paths)
			assert.Equal(t, tc.required, out.Required)
			assert.Equal(t, []string{"version", "size"}, params.Required, "params is not changed")
			for _, p := range paths {
				if p == "version" {
					assert.Equal(t, "Version.\n\n"+UnrequiredNote, out.Properties["version"].Description)
				}
			}
		})
	}
}
