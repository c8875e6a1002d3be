package schema

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCreateOnly(t *testing.T) {
	tests := []struct {
		name           string
		create, update string
		want           []string
	}{
		{
			name:   "top level",
			create: `{"properties": {"region": {}, "size": {}}}`,
			update: `{"properties": {"size": {}}}`,
			want:   []string{"region"},
		},
		{
			name:   "nested",
			create: `{"properties": {"storage": {"properties": {"class": {}, "gb": {}}}, "size": {}}}`,
			update: `{"properties": {"storage": {"properties": {"gb": {}}}, "size": {}}}`,
			want:   []string{"storage.class"},
		},
		{
			name:   "deeply nested and several, sorted",
			create: `{"properties": {"z": {}, "a": {"properties": {"b": {"properties": {"c": {}, "d": {}}}, "e": {}}}}}`,
			update: `{"properties": {"a": {"properties": {"b": {"properties": {"d": {}}}}}}}`,
			want:   []string{"a.b.c", "a.e", "z"},
		},
		{
			name:   "a whole object",
			create: `{"properties": {"storage": {"properties": {"class": {}}}, "size": {}}}`,
			update: `{"properties": {"size": {}}}`,
			want:   []string{"storage"},
		},
		{name: "no update schema: nothing", create: `{"properties": {"region": {}}}`},
		{name: "no create schema: nothing", update: `{"properties": {"size": {}}}`},
		{name: "same properties: nothing", create: `{"properties": {"size": {}}}`, update: `{"properties": {"size": {"maximum": 5}}}`},
		{name: "update schema {} accepts anything: nothing", create: `{"properties": {"region": {}}}`, update: `{}`},
		{name: "update schema true accepts anything: nothing", create: `{"properties": {"region": {}}}`, update: `true`},
		{name: "update schema without members: nothing", create: `{"properties": {"region": {}}}`, update: `{"type": "object", "minProperties": 1}`},
		{
			name:   "update schema that closes the object without members: everything",
			create: `{"properties": {"region": {}, "size": {}}}`, update: `{"additionalProperties": false}`,
			want: []string{"region", "size"},
		},
		{name: "update schema false: everything", create: `{"properties": {"region": {}}}`, update: `false`, want: []string{"region"}},
		{
			name:   "a nested object the update schema does not describe: nothing below it",
			create: `{"properties": {"storage": {"properties": {"class": {}}}}}`,
			update: `{"properties": {"storage": {"type": "object"}}}`,
		},
		{
			name:   "only the false schema in the update schema: create-only",
			create: `{"properties": {"region": {}, "size": {}}}`,
			update: `{"properties": {"region": false, "size": {}}}`,
			want:   []string{"region"},
		},
		{
			name:   "patternProperties of the update schema count",
			create: `{"properties": {"tag_team": {}, "region": {}}}`,
			update: `{"patternProperties": {"^tag_": {"type": "string"}}}`,
			want:   []string{"region"},
		},
		{
			name:   "$ref followed on both sides",
			create: `{"$ref": "#/definitions/params", "definitions": {"params": {"properties": {"region": {}, "size": {}}}}}`,
			update: `{"properties": {"size": {"$ref": "#/definitions/size"}}, "definitions": {"size": {"type": "integer"}}}`,
			want:   []string{"region"},
		},
		{
			name:   "allOf, anyOf, oneOf and if/then/else",
			create: `{"$schema": "http://json-schema.org/draft-07/schema#", "allOf": [{"properties": {"a": {}}}], "anyOf": [{"properties": {"b": {}}}], "oneOf": [{"properties": {"c": {}}}], "if": {"properties": {"x": {}}}, "then": {"properties": {"d": {}}}, "else": {"properties": {"e": {}}}}`,
			update: `{"$schema": "http://json-schema.org/draft-07/schema#", "allOf": [{"properties": {"b": {}}}, {"oneOf": [{"properties": {"d": {}}}]}]}`,
			want:   []string{"a", "c", "e"},
		},
		{
			name:   "2020-12 $defs and dependentSchemas",
			create: `{"$schema": "https://json-schema.org/draft/2020-12/schema", "$ref": "#/$defs/p", "$defs": {"p": {"properties": {"a": {}, "b": {}}}}, "dependentSchemas": {"a": {"properties": {"c": {}}}}}`,
			update: `{"$schema": "https://json-schema.org/draft/2020-12/schema", "properties": {"a": {}}}`,
			want:   []string{"b", "c"},
		},
		{
			name:   "recursive schemas are followed once around the cycle",
			create: `{"properties": {"child": {"$ref": "#"}, "region": {}, "size": {}}}`,
			update: `{"properties": {"child": {"$ref": "#"}, "size": {}}}`,
			want:   []string{"child.region", "region"},
		},
		{
			name:   "names that need brackets",
			create: `{"properties": {"labels": {"properties": {"app.kubernetes.io/name": {}, "team": {}}}, "a.b": {}}}`,
			update: `{"properties": {"labels": {"properties": {"team": {}}}}}`,
			want:   []string{"[a.b]", "labels[app.kubernetes.io/name]"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustCompile(t, tt.create, tt.update, "")
			assert.Equal(t, tt.want, s.CreateOnly())
		})
	}
}

func TestCreateOnlyDerivationIsBounded(t *testing.T) {
	// Definitions that refer to each other without a cycle: level i has two
	// properties that both lead to level i+1, 2^40 paths in all.
	var defs []string
	for i := range 40 {
		defs = append(defs, fmt.Sprintf(`"l%d": {"properties": {"x": {"$ref": "#/definitions/l%d"}, "y": {"$ref": "#/definitions/l%d"}, "only_create": {}}}`, i, i+1, i+1))
	}
	defs = append(defs, `"l40": {}`)
	create := `{"$ref": "#/definitions/l0", "definitions": {` + strings.Join(defs, ",") + `}}`
	update := strings.ReplaceAll(create, `, "only_create": {}`, `, "other": {}`)
	s := mustCompile(t, create, update, "")
	got := s.CreateOnly()
	require.NotEmpty(t, got)
	assert.Equal(t, "only_create", got[0])
	assert.LessOrEqual(t, len(got), maxDeriveLevels)
	for _, p := range got {
		assert.LessOrEqual(t, strings.Count(p, ".")+1, maxDeriveDepth, p)
	}
}

// instanceCreate and instanceUpdate: "region" and "storage.class" are
// create-only; the update schema closes the object.
const (
	instanceCreate = `{
  "type": "object",
  "properties": {
    "region":  {"type": "string"},
    "size":    {"type": "integer", "maximum": 100},
    "storage": {"type": "object", "properties": {"class": {"type": "string"}, "gb": {"type": "integer"}}}
  }
}`
	instanceUpdate = `{
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "size":    {"type": "integer", "maximum": 200},
    "storage": {"type": "object", "additionalProperties": false, "properties": {"gb": {"type": "integer"}}}
  }
}`
)

func TestValidateUpdate(t *testing.T) {
	const rule = "create-only parameter (in the plan's create schema, not in its update schema)"
	tests := []struct {
		name           string
		create, update string // "" : instanceCreate, instanceUpdate
		noUpdate       bool   // the plan has no update schema
		old, new       string
		want           []string
	}{
		{name: "unchanged", old: `{"region": "eu", "size": 1}`, new: `{"region": "eu", "size": 2}`},
		{name: "unchanged, written differently", old: `{"region": "eu", "storage": {"class": "ssd", "gb": 10}}`, new: `{"storage": {"gb": 1.0e1, "class": "ssd"}, "region": "eu"}`},
		{name: "both nil", old: "", new: ""},
		{name: "nil and null", old: "", new: "null"},
		{
			name: "changed",
			old:  `{"region": "eu"}`, new: `{"region": "us"}`,
			want: []string{`spec.parameters.region: Invalid value: "us": ` + rule + `: it cannot be changed after creation (was "eu"); delete and recreate the instance to change it`},
		},
		{
			name: "changed type",
			old:  `{"region": "1"}`, new: `{"region": 1}`,
			want: []string{`spec.parameters.region: Invalid value: 1: ` + rule + `: it cannot be changed after creation (was "1"); delete and recreate the instance to change it`},
		},
		{
			name: "set after creation",
			old:  `{"size": 1}`, new: `{"size": 1, "region": "us"}`,
			want: []string{`spec.parameters.region: Invalid value: "us": ` + rule + `: it cannot be set after creation (it was not set); delete and recreate the instance to set it`},
		},
		{
			name: "set after creation without old parameters",
			old:  "", new: `{"region": "us"}`,
			want: []string{`spec.parameters.region: Invalid value: "us": ` + rule + `: it cannot be set after creation (it was not set); delete and recreate the instance to set it`},
		},
		{
			name: "removed",
			old:  `{"region": "eu", "size": 1}`, new: `{"size": 1}`,
			want: []string{`spec.parameters.region: Forbidden: ` + rule + `: it cannot be removed after creation (was "eu"); delete and recreate the instance to remove it`},
		},
		{
			name: "removed with all parameters",
			old:  `{"region": "eu", "storage": {"class": "ssd"}}`, new: "",
			want: []string{
				`spec.parameters.region: Forbidden: ` + rule + `: it cannot be removed after creation (was "eu"); delete and recreate the instance to remove it`,
				`spec.parameters.storage.class: Forbidden: ` + rule + `: it cannot be removed after creation (was "ssd"); delete and recreate the instance to remove it`,
			},
		},
		{
			name: "null is a value, not absence",
			old:  `{"region": null}`, new: `{}`,
			want: []string{`spec.parameters.region: Forbidden: ` + rule + `: it cannot be removed after creation (was null); delete and recreate the instance to remove it`},
		},
		{
			name: "nested changed, sibling updatable",
			old:  `{"storage": {"class": "ssd", "gb": 10}}`, new: `{"storage": {"class": "hdd", "gb": 20}}`,
			want: []string{`spec.parameters.storage.class: Invalid value: "hdd": ` + rule + `: it cannot be changed after creation (was "ssd"); delete and recreate the instance to change it`},
		},
		{
			name: "nested removed with its parent",
			old:  `{"storage": {"class": "ssd", "gb": 10}}`, new: `{"size": 1}`,
			want: []string{`spec.parameters.storage.class: Forbidden: ` + rule + `: it cannot be removed after creation (was "ssd"); delete and recreate the instance to remove it`},
		},
		{
			name: "parent replaced by a scalar",
			old:  `{"storage": {"class": "ssd"}}`, new: `{"storage": "ssd"}`,
			want: []string{
				`spec.parameters.storage.class: Forbidden: ` + rule + `: it cannot be removed after creation (was "ssd"); delete and recreate the instance to remove it`,
				`spec.parameters.storage: Invalid value: "ssd": does not match the plan's update schema at /storage: must be of type object, not string`,
			},
		},
		{
			name: "create-only and update-schema violations together",
			old:  `{"region": "eu", "size": 1}`, new: `{"region": "us", "size": 500, "tier": "gold"}`,
			want: []string{
				`spec.parameters.region: Invalid value: "us": ` + rule + `: it cannot be changed after creation (was "eu"); delete and recreate the instance to change it`,
				`spec.parameters.size: Invalid value: 500: does not match the plan's update schema at /size: must be <= 200`,
				`spec.parameters.tier: Forbidden: not allowed by the plan's update schema at /tier: the schema does not list this parameter and allows no others (additionalProperties: false)`,
			},
		},
		{
			name: "the update schema, not the create schema, applies",
			old:  `{"size": 1}`, new: `{"size": 150}`,
		},
		{
			name:     "no update schema: nothing is create-only or checked",
			noUpdate: true,
			old:      `{"region": "eu"}`, new: `{"region": "us", "size": 500}`,
		},
		{
			name: "new parameters not an object",
			old:  `{"region": "eu"}`, new: `["region"]`,
			want: []string{`spec.parameters: Invalid value: ["region"]: must be a JSON object that maps parameter names to values, not an array`},
		},
		{
			name: "stored parameters not an object",
			old:  `"eu"`, new: `{"region": "eu"}`,
			want: []string{`spec.parameters: Internal error: the create-only parameters ([region storage.class]) cannot be checked because the stored parameters must be a JSON object that maps parameter names to values, not a string; delete and recreate the instance`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			create, update := tt.create, tt.update
			if create == "" {
				create = instanceCreate
			}
			if update == "" && !tt.noUpdate {
				update = instanceUpdate
			}
			s := mustCompile(t, create, update, "")
			errs := s.ValidateUpdate(ext(tt.old), ext(tt.new), paramsPath)
			assert.Equal(t, tt.want, messages(errs))
		})
	}
}

func TestUpdateParameters(t *testing.T) {
	s := mustCompile(t, instanceCreate, instanceUpdate, "")
	tests := []struct {
		name    string
		schemas *PlanSchemas
		new     string
		want    string
		wantErr string
	}{
		{name: "create-only removed, top level and nested", schemas: s, new: `{"region": "eu", "size": 5, "storage": {"class": "ssd", "gb": 10}}`, want: `{"size":5,"storage":{"gb":10}}`},
		{name: "nothing to remove", schemas: s, new: `{"size": 5}`, want: `{"size":5}`},
		{name: "everything removed", schemas: s, new: `{"region": "eu"}`, want: `{}`},
		{name: "parent that is not an object is kept", schemas: s, new: `{"storage": "ssd"}`, want: `{"storage":"ssd"}`},
		{name: "no parameters", schemas: s, new: "", want: `{}`},
		{name: "numbers, text and key order", schemas: s, new: `{"z": 1.50, "a": 123456789012345678901234567890, "html": "<a & b>", "u": "\u00e9"}`, want: `{"a":123456789012345678901234567890,"html":"<a & b>","u":"é","z":1.50}`},
		{name: "no update schema: nothing removed", schemas: mustCompile(t, instanceCreate, "", ""), new: `{"region": "eu"}`, want: `{"region":"eu"}`},
		{name: "nil schemas", schemas: nil, new: `{"region": "eu"}`, want: `{"region":"eu"}`},
		{name: "not an object", schemas: s, new: `[1]`, wantErr: "spec.parameters must be a JSON object that maps parameter names to values, not an array"},
		{name: "not JSON", schemas: s, new: `{`, wantErr: "spec.parameters is not valid JSON: unexpected end of JSON input"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.schemas.UpdateParameters(ext(tt.new))
			if tt.wantErr != "" {
				require.EqualError(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(got))
			assert.True(t, json.Valid(got))
		})
	}
}

// TestUpdateParametersPassTheUpdateSchema is the reason for
// UpdateParameters: the update schema forbids the create-only parameters
// that the instance still holds.
func TestUpdateParametersPassTheUpdateSchema(t *testing.T) {
	s := mustCompile(t, instanceCreate, instanceUpdate, "")
	update := mustCompile(t, instanceUpdate, "", "")
	params := ext(`{"region": "eu", "size": 5, "storage": {"class": "ssd", "gb": 10}}`)
	require.NotEmpty(t, update.ValidateProvision(params, paramsPath), "the full parameters fail the update schema")
	assert.Empty(t, s.ValidateUpdate(params, params, paramsPath))
	sent, err := s.UpdateParameters(params)
	require.NoError(t, err)
	assert.Empty(t, update.ValidateProvision(ext(string(sent)), paramsPath), "what is sent passes it")
}

func TestStripLeavesTheInputAlone(t *testing.T) {
	s := mustCompile(t, instanceCreate, instanceUpdate, "")
	in := object{"region": "eu", "storage": object{"class": "ssd", "gb": json.Number("1")}, "size": json.Number("2")}
	out, changed := s.strip.strip(in)
	assert.True(t, changed)
	assert.Equal(t, object{"storage": object{"gb": json.Number("1")}, "size": json.Number("2")}, out)
	assert.Equal(t, object{"region": "eu", "storage": object{"class": "ssd", "gb": json.Number("1")}, "size": json.Number("2")}, in)

	same := object{"size": json.Number("2")}
	out, changed = s.strip.strip(same)
	assert.False(t, changed)
	assert.Equal(t, same, out)
}

func TestCreateOnlyReturnsACopy(t *testing.T) {
	s := mustCompile(t, instanceCreate, instanceUpdate, "")
	got := s.CreateOnly()
	require.Equal(t, []string{"region", "storage.class"}, got)
	got[0] = "changed"
	assert.Equal(t, []string{"region", "storage.class"}, s.CreateOnly())
}

func TestFillCreateOnly(t *testing.T) {
	s := mustCompile(t, instanceCreate, instanceUpdate, "")
	tests := []struct {
		name       string
		schemas    *PlanSchemas
		held, from string
		want       string
	}{
		{name: "what the broker no longer reports, top level and nested", schemas: s,
			held: `{"size": 5, "storage": {"gb": 10}}`, from: `{"region": "eu", "size": 4, "storage": {"class": "ssd", "gb": 9}}`,
			want: `{"region":"eu","size":5,"storage":{"class":"ssd","gb":10}}`},
		{name: "what the broker holds stays, even otherwise", schemas: s,
			held: `{"region": "us"}`, from: `{"region": "eu", "storage": {"class": "ssd"}}`, want: `{"region":"us","storage":{"class":"ssd"}}`},
		{name: "not in the spec: nothing to fill", schemas: s, held: `{"size": 5}`, from: `{"size": 5}`, want: `{"size":5}`},
		{name: "a parent that is not an object is left", schemas: s, held: `{"storage": "ssd"}`, from: `{"storage": {"class": "ssd"}}`, want: `{"storage":"ssd"}`},
		{name: "the broker says nothing of its parameters", schemas: s, held: ``, from: `{"region": "eu"}`, want: ``},
		{name: "nil schemas: nothing is create-only", schemas: nil, held: `{"size": 5}`, from: `{"region": "eu"}`, want: `{"size":5}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.schemas.FillCreateOnly(ext(tt.held), ext(tt.from))
			require.NoError(t, err)
			if tt.want == "" {
				assert.Nil(t, got)
				return
			}
			assert.JSONEq(t, tt.want, string(got))
		})
	}
	_, err := s.FillCreateOnly(ext(`[1]`), ext(`{}`))
	assert.ErrorContains(t, err, "the broker's parameters must be a JSON object")
}
