package schema

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCompile(t *testing.T) {
	const valid = `{"type": "object", "properties": {"size": {"type": "integer"}}}`
	tests := []struct {
		name                 string
		create, update, bind string
		wantErr              []string // fragments of the error; none: Compile succeeds
		wantCreate           bool     // the plan has a create schema
	}{
		{name: "no schemas"},
		{name: "null and blank mean no schema", create: " null ", update: "  ", bind: "null"},
		{name: "all three", create: valid, update: valid, bind: valid, wantCreate: true},
		{name: "draft-04 named", create: `{"$schema": "http://json-schema.org/draft-04/schema#", "properties": {"a": {"minimum": 0, "exclusiveMinimum": true}}}`, wantCreate: true},
		{name: "draft-06 named", create: `{"$schema": "http://json-schema.org/draft-06/schema#", "properties": {"a": {"const": 1}}}`, wantCreate: true},
		{name: "draft-07 named", create: `{"$schema": "http://json-schema.org/draft-07/schema#", "if": {"required": ["a"]}, "then": {"required": ["b"]}}`, wantCreate: true},
		{name: "draft 2019-09 named", create: `{"$schema": "https://json-schema.org/draft/2019-09/schema", "dependentRequired": {"a": ["b"]}}`, wantCreate: true},
		{name: "draft 2020-12 named", create: `{"$schema": "https://json-schema.org/draft/2020-12/schema", "prefixItems": [{"type": "string"}]}`, wantCreate: true},
		{name: "boolean schema", create: `true`, wantCreate: true},
		{name: "local $ref", create: `{"definitions": {"gb": {"type": "integer"}}, "properties": {"size": {"$ref": "#/definitions/gb"}}}`, wantCreate: true},
		{
			name:   "invalid keyword value names schema, pointer and rule",
			create: `{"properties": {"size": {"maximum": "big"}}}`,
			wantErr: []string{
				`the plan's create schema (service_instance.create.parameters) is not a valid JSON Schema`,
				`at /properties/size/maximum: must be of type number, not string`,
			},
		},
		{
			name:    "invalid update schema is named",
			update:  `{"properties": {"size": {"minLength": -1}}}`,
			wantErr: []string{`the plan's update schema (service_instance.update.parameters) is not a valid JSON Schema`, `at /properties/size/minLength`},
		},
		{
			name:    "invalid bind schema is named",
			bind:    `{"type": "objekt"}`,
			wantErr: []string{`the plan's bind schema (service_binding.create.parameters) is not a valid JSON Schema`, `at /type`},
		},
		{
			name:   "every invalid schema is reported",
			create: `{"type": 1}`, update: `{"required": "a"}`, bind: `[`,
			wantErr: []string{"plan's create schema", "plan's update schema", "plan's bind schema (service_binding.create.parameters) is not valid JSON"},
		},
		{name: "not JSON", create: `{"type":`, wantErr: []string{"the plan's create schema (service_instance.create.parameters) is not valid JSON"}},
		{name: "trailing data", create: `{} {}`, wantErr: []string{"is not valid JSON"}},
		{
			name:    "remote $ref refused",
			create:  `{"properties": {"size": {"$ref": "http://example.com/schemas/size.json"}}}`,
			wantErr: []string{`refers to "http://example.com/schemas/size.json", outside the schema`, "never fetches remote or file references"},
		},
		{
			name:    "file $ref refused",
			create:  `{"$ref": "file:///etc/passwd"}`,
			wantErr: []string{`refers to "file:///etc/passwd", outside the schema`},
		},
		{
			name:    "relative $ref refused",
			create:  `{"$ref": "definitions.json#/size"}`,
			wantErr: []string{`refers to "lockstep:///definitions.json", outside the schema`},
		},
		{
			name:    "$ref relative to a remote $id refused",
			create:  `{"$schema": "http://json-schema.org/draft-07/schema#", "$id": "https://broker.example/schemas/db.json", "properties": {"a": {"$ref": "common.json"}}}`,
			wantErr: []string{`refers to "https://broker.example/schemas/common.json", outside the schema`},
		},
		{
			name:    "dangling local $ref",
			create:  `{"properties": {"a": {"$ref": "#/definitions/nope"}}}`,
			wantErr: []string{`the plan's create schema (service_instance.create.parameters) does not compile: a $ref points to "#/definitions/nope", which is not in the schema`},
		},
		{
			name:    "draft lockstep does not understand",
			create:  `{"$schema": "http://json-schema.org/draft-03/schema#"}`,
			wantErr: []string{`names a JSON Schema draft lockstep does not understand in "$schema" ("http://json-schema.org/draft-03/schema#")`},
		},
		{
			name:    "regular expression Go cannot compile",
			create:  `{"properties": {"a": {"pattern": "^(?!admin)"}}}`,
			wantErr: []string{"at /properties/a/pattern: must be a valid regex"},
		},
		{
			name:    "named draft does not fall back",
			create:  `{"$schema": "http://json-schema.org/draft-04/schema#", "exclusiveMinimum": 0}`,
			wantErr: []string{`is not a valid JSON Schema (read as the draft its "$schema" names)`, "at /exclusiveMinimum: must be of type boolean, not number"},
		},
		{name: "draft-06+ forms without $schema fall back to draft-07", create: `{"properties": {"a": {"exclusiveMinimum": 0}, "b": true}}`, wantCreate: true},
		{
			name:   "neither draft-04 nor draft-07: both reasons",
			create: `{"exclusiveMinimum": 0, "maxLength": "x"}`,
			wantErr: []string{
				`without "$schema" it is read as draft-04 (the OSB default) and then as draft-07, and both fail`,
				"draft-04: ", "at /exclusiveMinimum: must be of type boolean, not number",
				"draft-07: at /maxLength: must be of type integer, not string",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Compile(raw(tt.create), raw(tt.update), raw(tt.bind))
			if len(tt.wantErr) > 0 {
				require.Error(t, err)
				assert.Nil(t, s)
				for _, frag := range tt.wantErr {
					assert.Contains(t, err.Error(), frag)
				}
				return
			}
			require.NoError(t, err)
			require.NotNil(t, s)
			assert.Equal(t, tt.wantCreate, s.create != nil)
		})
	}
}

// raw is a schema or parameters as raw JSON; "" is none.
func raw(s string) []byte {
	if s == "" {
		return nil
	}
	return []byte(s)
}

func TestCompileErrorUnwrapsToTheLibrary(t *testing.T) {
	_, err := Compile(raw(`{"$ref": "http://example.com/s.json"}`), nil, nil)
	var load *jsonschema.LoadURLError
	require.True(t, errors.As(err, &load), "error %v", err)
	assert.Equal(t, "http://example.com/s.json", load.URL)
	assert.ErrorIs(t, load.Err, ErrRemoteRef)
	assert.ErrorIs(t, err, ErrRemoteRef, "a remote reference can be told from other compile errors")
}

// TestCompileFetchesNothing points every kind of remote reference at a
// local server and checks that Compile refuses them without a request.
func TestCompileFetchesNothing(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		_, _ = w.Write([]byte(`{"type": "integer"}`))
	}))
	t.Cleanup(srv.Close)
	for _, schema := range []string{
		`{"$ref": "` + srv.URL + `/size.json"}`,
		`{"properties": {"a": {"$ref": "` + srv.URL + `/size.json#/x"}}}`,
		`{"$schema": "` + srv.URL + `/meta.json"}`,
		`{"$schema": "http://json-schema.org/draft-07/schema#", "$id": "` + srv.URL + `/root.json", "items": {"$ref": "item.json"}}`,
	} {
		_, err := Compile(raw(schema), nil, nil)
		require.Error(t, err, schema)
		assert.Contains(t, err.Error(), srv.URL, schema)
	}
	assert.Zero(t, requests.Load(), "Compile must never fetch a schema")
}

func TestDefaultDraft(t *testing.T) {
	tests := []struct {
		name    string
		schema  string
		params  string
		wantErr string // "" : valid
	}{
		{"draft-04 exclusiveMinimum is a boolean", `{"properties": {"n": {"minimum": 0, "exclusiveMinimum": true}}}`, `{"n": 0}`, "must be > 0"},
		{"draft-04 exclusiveMinimum allows above", `{"properties": {"n": {"minimum": 0, "exclusiveMinimum": true}}}`, `{"n": 1}`, ""},
		{"draft-04 ignores const (a draft-06 keyword)", `{"properties": {"n": {"const": 1}}}`, `{"n": 2}`, ""},
		{"draft-04 asserts format", `{"properties": {"mail": {"format": "email"}}}`, `{"mail": "nobody"}`, "must be a valid email"},
		{"fallback to draft-07 for numeric exclusiveMinimum", `{"properties": {"n": {"exclusiveMinimum": 0}}}`, `{"n": 0}`, "must be > 0"},
		{"fallback to draft-07 applies const too", `{"properties": {"n": {"exclusiveMinimum": 0, "const": 1}}}`, `{"n": 2}`, "must be 1"},
		{"2020-12 does not assert format", `{"$schema": "https://json-schema.org/draft/2020-12/schema", "properties": {"mail": {"format": "email"}}}`, `{"mail": "nobody"}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Compile(raw(tt.schema), nil, nil)
			require.NoError(t, err)
			errs := s.ValidateProvision(ext(tt.params), paramsPath)
			if tt.wantErr == "" {
				assert.Empty(t, errs)
				return
			}
			require.Len(t, errs, 1)
			assert.Contains(t, errs[0].Detail, tt.wantErr)
		})
	}
}
