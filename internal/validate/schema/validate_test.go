package schema

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// paramsPath is where the parameters sit in a ServiceInstance or
// ServiceBinding.
var paramsPath = field.NewPath("spec", "parameters")

// ext is parameters as a RawExtension; "" is none (nil).
func ext(s string) *runtime.RawExtension {
	if s == "" {
		return nil
	}
	return &runtime.RawExtension{Raw: []byte(s)}
}

// messages are errors as kubectl shows them.
func messages(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}

// mustCompile compiles schemas that the test knows to be valid.
func mustCompile(t testing.TB, create, update, bind string) *PlanSchemas {
	t.Helper()
	s, err := Compile(raw(create), raw(update), raw(bind))
	require.NoError(t, err)
	return s
}

// dbSchema is a create schema with scalar, nested and array parameters.
const dbSchema = `{
  "type": "object",
  "required": ["version"],
  "additionalProperties": false,
  "properties": {
    "version": {"type": "string", "enum": ["15", "16", "17"]},
    "size":    {"type": "integer", "minimum": 1, "maximum": 100},
    "name":    {"type": "string", "pattern": "^[a-z]+$", "maxLength": 8},
    "storage": {
      "type": "object",
      "required": ["class"],
      "properties": {"class": {"type": "string"}, "gb": {"type": "integer", "multipleOf": 10}}
    },
    "users": {
      "type": "array", "maxItems": 3, "uniqueItems": true,
      "items": {"type": "object", "properties": {"name": {"type": "string", "minLength": 2}}}
    },
    "matrix": {"type": "array", "items": {"type": "array", "items": {"type": "number"}}},
    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
    "mode":   {"anyOf": [{"type": "string", "enum": ["fast", "safe"]}, {"type": "integer", "minimum": 3}]},
    "tier":   {"oneOf": [{"type": "integer"}, {"type": "number", "minimum": 1}]}
  }
}`

func TestValidateProvision(t *testing.T) {
	tests := []struct {
		name   string
		schema string // create schema; "" : dbSchema
		params string // "" : nil
		want   []string
	}{
		{name: "valid", params: `{"version": "16", "size": 10, "storage": {"class": "ssd", "gb": 20}, "users": [{"name": "ann"}], "mode": "fast"}`},
		{name: "valid with numbers written differently", params: `{"version": "16", "size": 1.0e1, "storage": {"class": "ssd", "gb": 2e1}}`},
		{
			name:   "one violation",
			params: `{"version": "16", "size": 500}`,
			want:   []string{`spec.parameters.size: Invalid value: 500: does not match the plan's create schema at /size: must be <= 100`},
		},
		{
			name:   "every violation, sorted by path, with exact paths",
			params: `{"size": 0, "name": "Bob-the-builder", "storage": {"gb": 15}, "users": [{"name": "a"}, {"name": 7}], "extra": true, "matrix": [[1], [2, "x"]], "labels": {"app.kubernetes.io/name": 5}}`,
			want: []string{
				`spec.parameters.extra: Forbidden: not allowed by the plan's create schema at /extra: the schema does not list this parameter and allows no others (additionalProperties: false)`,
				`spec.parameters.labels[app.kubernetes.io/name]: Invalid value: 5: does not match the plan's create schema at /labels/app.kubernetes.io~1name: must be of type string, not number`,
				`spec.parameters.matrix[1][1]: Invalid value: "x": does not match the plan's create schema at /matrix/1/1: must be of type number, not string`,
				`spec.parameters.name: Invalid value: "Bob-the-builder": does not match the plan's create schema at /name: must be at most 8 characters long, is 15`,
				`spec.parameters.name: Invalid value: "Bob-the-builder": does not match the plan's create schema at /name: must match the regular expression "^[a-z]+$"`,
				`spec.parameters.size: Invalid value: 0: does not match the plan's create schema at /size: must be >= 1`,
				`spec.parameters.storage.class: Required value: required by the plan's create schema at /storage/class`,
				`spec.parameters.storage.gb: Invalid value: 15: does not match the plan's create schema at /storage/gb: must be a multiple of 10`,
				`spec.parameters.users[0].name: Invalid value: "a": does not match the plan's create schema at /users/0/name: must be at least 2 characters long, is 1`,
				`spec.parameters.users[1].name: Invalid value: 7: does not match the plan's create schema at /users/1/name: must be of type string, not number`,
				`spec.parameters.version: Required value: required by the plan's create schema at /version`,
			},
		},
		{
			name:   "array rules",
			params: `{"version": "16", "users": [{"name": "ann"}, {"name": "bob"}, {"name": "ann"}, {"name": "cy"}]}`,
			want: []string{
				`spec.parameters.users: Invalid value: [{"name":"ann"},{"name":"bob"},{"name":"ann"},{"name":"cy"}]: does not match the plan's create schema at /users: items 0 and 2 are equal, but the items must be unique`,
				`spec.parameters.users: Invalid value: [{"name":"ann"},{"name":"bob"},{"name":"ann"},{"name":"cy"}]: does not match the plan's create schema at /users: must have at most 3 items, has 4`,
			},
		},
		{
			name:   "anyOf is one error naming every alternative",
			params: `{"version": "16", "mode": 2}`,
			want: []string{
				`spec.parameters.mode: Invalid value: 2: does not match the plan's create schema at /mode: must match at least one of the anyOf alternatives: [0] must be of type string, not number; [1] must be >= 3`,
			},
		},
		{
			name:   "oneOf matching two alternatives",
			params: `{"version": "16", "tier": 2}`,
			want: []string{
				`spec.parameters.tier: Invalid value: 2: does not match the plan's create schema at /tier: must match exactly one of the oneOf alternatives, but matches alternatives 0 and 1`,
			},
		},
		{
			name:   "oneOf matching none",
			params: `{"version": "16", "tier": "x"}`,
			want: []string{
				`spec.parameters.tier: Invalid value: "x": does not match the plan's create schema at /tier: must match exactly one of the oneOf alternatives, but matches none: [0] must be of type integer, not string; [1] must be of type number, not string`,
			},
		},
		{
			name:   "enum",
			params: `{"version": "14"}`,
			want:   []string{`spec.parameters.version: Invalid value: "14": does not match the plan's create schema at /version: must be one of "15", "16", "17"`},
		},
		{
			name: "nil parameters are {}", params: "",
			want: []string{`spec.parameters.version: Required value: required by the plan's create schema at /version`},
		},
		{
			name: "null parameters are {}", params: " null ",
			want: []string{`spec.parameters.version: Required value: required by the plan's create schema at /version`},
		},
		{name: "nil parameters with an empty schema", schema: `{}`, params: ""},
		{
			name: "the whole object against a root rule", schema: `{"minProperties": 2}`, params: `{"a": 1}`,
			want: []string{`spec.parameters: Invalid value: {"a":1}: does not match the plan's create schema at /: must have at least 2 properties, has 1`},
		},
		{
			name: "array instead of an object", params: `[1, 2]`,
			want: []string{`spec.parameters: Invalid value: [1,2]: must be a JSON object that maps parameter names to values, not an array`},
		},
		{
			name: "string instead of an object", params: `"size=1"`,
			want: []string{`spec.parameters: Invalid value: "size=1": must be a JSON object that maps parameter names to values, not a string`},
		},
		{
			name: "number instead of an object", params: `42`,
			want: []string{`spec.parameters: Invalid value: 42: must be a JSON object that maps parameter names to values, not a number`},
		},
		{
			name: "boolean instead of an object", params: `true`,
			want: []string{`spec.parameters: Invalid value: true: must be a JSON object that maps parameter names to values, not true`},
		},
		{
			name: "malformed JSON", params: `{"size": }`,
			want: []string{`spec.parameters: Invalid value: {"size": }: is not valid JSON: invalid character '}' looking for the beginning of a value (at byte 9)`},
		},
		{
			name: "data after the object", params: `{} x`,
			want: []string{`spec.parameters: Invalid value: {} x: is not valid JSON: invalid character 'x' after the JSON value (at byte 3)`},
		},
		{
			name: "long values are cut", schema: `{"properties": {"note": {"maxLength": 3}}}`, params: `{"note": "` + strings.Repeat("ab", 100) + `"}`,
			want: []string{`spec.parameters.note: Invalid value: "` + strings.Repeat("ab", 59) + `a...: does not match the plan's create schema at /note: must be at most 3 characters long, is 200`},
		},
		{
			name: "numbers too far out for exact arithmetic", schema: `{"properties": {"n": {"maximum": 10}, "list": {"items": {"type": "number"}}}}`, params: `{"n": 1e999999999, "list": [1, -2E+20000]}`,
			want: []string{
				`spec.parameters.list[1]: Invalid value: -2E+20000: number at /list/1 is out of range: parameter numbers may have at most 1000 characters and a decimal exponent between -10000 and 10000`,
				`spec.parameters.n: Invalid value: 1e999999999: number at /n is out of range: parameter numbers may have at most 1000 characters and a decimal exponent between -10000 and 10000`,
			},
		},
		{
			name: "huge numbers within range are compared exactly", schema: `{"properties": {"n": {"maximum": 1e300}}}`, params: `{"n": 1.0000000000000000000000000001e300}`,
			want: []string{`spec.parameters.n: Invalid value: 1.0000000000000000000000000001e300: does not match the plan's create schema at /n: must be <= 1e+300`},
		},
		{
			name: "unusual member names", schema: `{"properties": {"a/b": {"type": "string"}, "c~d": {"type": "string"}, "": {"type": "string"}}}`, params: `{"a/b": 1, "c~d": 2, "": 3}`,
			want: []string{
				`spec.parameters.a/b: Invalid value: 1: does not match the plan's create schema at /a~1b: must be of type string, not number`,
				`spec.parameters.c~d: Invalid value: 2: does not match the plan's create schema at /c~0d: must be of type string, not number`,
				`spec.parameters[]: Invalid value: 3: does not match the plan's create schema at /: must be of type string, not number`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			schema := tt.schema
			if schema == "" {
				schema = dbSchema
			}
			s := mustCompile(t, schema, "", "")
			errs := s.ValidateProvision(ext(tt.params), paramsPath)
			assert.Equal(t, tt.want, messages(errs))
			assert.Equal(t, errs, s.ValidateProvision(ext(tt.params), paramsPath), "deterministic")
		})
	}
}

func TestErrorsNameTheKeyword(t *testing.T) {
	s := mustCompile(t, dbSchema, "", "")
	errs := s.ValidateProvision(ext(`{"size": 500, "extra": 1, "mode": 1, "storage": {"class": 1}}`), paramsPath)
	origins := map[string]string{}
	for _, e := range errs {
		origins[e.Field] = e.Origin
	}
	assert.Equal(t, map[string]string{
		"spec.parameters.size":          "maximum",
		"spec.parameters.extra":         "additionalProperties",
		"spec.parameters.mode":          "anyOf",
		"spec.parameters.storage.class": "type",
		"spec.parameters.version":       "required",
	}, origins)
}

func TestValidateProvisionPerDraft(t *testing.T) {
	tests := []struct {
		name, schema, valid, invalid, wantErr string
	}{
		{
			"draft-04", `{"$schema": "http://json-schema.org/draft-04/schema#", "properties": {"n": {"maximum": 5, "exclusiveMaximum": true}}}`,
			`{"n": 4}`, `{"n": 5}`, `spec.parameters.n: Invalid value: 5: does not match the plan's create schema at /n: must be < 5`,
		},
		{
			"draft-06", `{"$schema": "http://json-schema.org/draft-06/schema#", "properties": {"n": {"const": "x"}}, "propertyNames": {"maxLength": 3}}`,
			`{"n": "x"}`, `{"n": "y"}`, `spec.parameters.n: Invalid value: "y": does not match the plan's create schema at /n: must be "x"`,
		},
		{
			"draft-06 propertyNames", `{"$schema": "http://json-schema.org/draft-06/schema#", "propertyNames": {"pattern": "^[a-z]+$"}}`,
			`{"abc": 1}`, `{"Abc": 1}`, `spec.parameters.Abc: Invalid value: "Abc": parameter name does not match the plan's create schema at /: name "Abc" must match the regular expression "^[a-z]+$"`,
		},
		{
			"draft-07", `{"$schema": "http://json-schema.org/draft-07/schema#", "if": {"properties": {"ha": {"const": true}}, "required": ["ha"]}, "then": {"required": ["replicas"]}}`,
			`{"ha": true, "replicas": 3}`, `{"ha": true}`, `spec.parameters.replicas: Required value: required by the plan's create schema at /replicas`,
		},
		{
			"draft 2019-09", `{"$schema": "https://json-schema.org/draft/2019-09/schema", "properties": {"a": {}}, "dependentRequired": {"a": ["b"]}, "unevaluatedProperties": false}`,
			`{}`, `{"a": 1, "c": 2}`, `spec.parameters.b: Required value: required by the plan's create schema at /b when "a" is set (dependentRequired)`,
		},
		{
			"draft 2020-12", `{"$schema": "https://json-schema.org/draft/2020-12/schema", "properties": {"pair": {"prefixItems": [{"type": "string"}, {"type": "integer"}], "items": false}}}`,
			`{"pair": ["a", 1]}`, `{"pair": ["a", "b"]}`, `spec.parameters.pair[1]: Invalid value: "b": does not match the plan's create schema at /pair/1: must be of type integer, not string`,
		},
		{
			"no $schema: draft-04", `{"properties": {"n": {"type": "integer"}}, "dependencies": {"n": ["m"]}}`,
			`{"n": 1, "m": 2}`, `{"n": 1}`, `spec.parameters.m: Required value: required by the plan's create schema at /m when "n" is set (dependencies)`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustCompile(t, tt.schema, "", "")
			assert.Empty(t, s.ValidateProvision(ext(tt.valid), paramsPath))
			errs := s.ValidateProvision(ext(tt.invalid), paramsPath)
			require.NotEmpty(t, errs)
			assert.Contains(t, messages(errs), tt.wantErr)
		})
	}
}

func TestUnevaluatedPropertiesAreForbidden(t *testing.T) {
	s := mustCompile(t, `{"$schema": "https://json-schema.org/draft/2020-12/schema", "properties": {"a": {}}, "unevaluatedProperties": false}`, "", "")
	assert.Equal(t, []string{
		`spec.parameters.c: Forbidden: not allowed by the plan's create schema at /c: the schema allows no value here`,
	}, messages(s.ValidateProvision(ext(`{"a": 1, "c": 2}`), paramsPath)))
}

func TestNestingBeyondTheLimit(t *testing.T) {
	s := mustCompile(t, `{"properties": {"deep": {"$ref": "#/definitions/any"}}, "definitions": {"any": {"items": {"$ref": "#/definitions/any"}}}}`, "", "")
	ok := `{"deep": ` + strings.Repeat("[", maxNesting-1) + strings.Repeat("]", maxNesting-1) + `}` // maxNesting levels with the top
	assert.Empty(t, s.ValidateProvision(ext(ok), paramsPath))

	deep := `{"deep": ` + strings.Repeat("[", maxNesting) + strings.Repeat("]", maxNesting) + `}` // one level too many
	errs := s.ValidateProvision(ext(deep), paramsPath)
	require.Len(t, errs, 1)
	assert.Contains(t, errs[0].Detail, "parameters nest objects and arrays more than 1000 levels deep at /deep/0/0/0/")
	assert.True(t, strings.HasPrefix(errs[0].Field, "spec.parameters.deep[0][0][0]"), errs[0].Field)

	tooDeep := `{"deep": ` + strings.Repeat("[", maxDecodeDepth+1) + strings.Repeat("]", maxDecodeDepth+1) + `}`
	errs = s.ValidateProvision(ext(tooDeep), paramsPath)
	require.Len(t, errs, 1)
	assert.Contains(t, errs[0].Detail, "is not valid JSON: exceeded max depth")
}

// TestLibraryPanicBecomesAnError checks the last line of defence: numbers
// that checkLimits would refuse make the schema library panic (it parses
// them into big.Rat and does not check the result), and a panic must come
// back as an error, never reach the webhook.
func TestLibraryPanicBecomesAnError(t *testing.T) {
	s := mustCompile(t, `{"properties": {"n": {"maximum": 10}}}`, "", "")
	errs := s.create.validate(params{obj: object{"n": json.Number("1e999999999")}}, paramsPath)
	require.Len(t, errs, 1)
	assert.Equal(t, field.ErrorTypeInternal, errs[0].Type)
	assert.Contains(t, errs[0].Detail, "could not check the parameters against the plan's create schema: the JSON Schema library failed")
}

func TestParametersAsObject(t *testing.T) {
	s := mustCompile(t, dbSchema, "", "")
	u := &unstructured.Unstructured{Object: map[string]any{"version": "16", "size": int64(500)}}
	assert.Equal(t, []string{
		`spec.parameters.size: Invalid value: 500: does not match the plan's create schema at /size: must be <= 100`,
	}, messages(s.ValidateProvision(&runtime.RawExtension{Object: u}, paramsPath)))
}

func TestWithoutSchemasOnlyTheShapeIsChecked(t *testing.T) {
	for name, s := range map[string]*PlanSchemas{"nil": nil, "empty": mustCompile(t, "", "", "")} {
		t.Run(name, func(t *testing.T) {
			assert.Empty(t, s.ValidateProvision(ext(`{"anything": [1, {"goes": 1e999999999}]}`), paramsPath))
			assert.Empty(t, s.ValidateBind(ext(`{"anything": 1}`), paramsPath))
			assert.Empty(t, s.ValidateUpdate(ext(`{"a": 1}`), ext(`{"a": 2}`), paramsPath))
			assert.Empty(t, s.CreateOnly())
			for _, check := range []func(*runtime.RawExtension) field.ErrorList{
				func(p *runtime.RawExtension) field.ErrorList { return s.ValidateProvision(p, paramsPath) },
				func(p *runtime.RawExtension) field.ErrorList { return s.ValidateBind(p, paramsPath) },
				func(p *runtime.RawExtension) field.ErrorList { return s.ValidateUpdate(nil, p, paramsPath) },
			} {
				assert.Equal(t, []string{
					`spec.parameters: Invalid value: ["a"]: must be a JSON object that maps parameter names to values, not an array`,
				}, messages(check(ext(`["a"]`))))
			}
		})
	}
}

func TestValidateBind(t *testing.T) {
	s := mustCompile(t, dbSchema, "", `{"type": "object", "properties": {"role": {"enum": ["reader", "writer"]}}, "additionalProperties": false}`)
	tests := []struct {
		name, params string
		want         []string
	}{
		{name: "valid", params: `{"role": "reader"}`},
		{name: "none", params: ""},
		{name: "bind schema, not create schema", params: `{"role": "admin", "version": "16"}`, want: []string{
			`spec.parameters.role: Invalid value: "admin": does not match the plan's bind schema at /role: must be one of "reader", "writer"`,
			`spec.parameters.version: Forbidden: not allowed by the plan's bind schema at /version: the schema does not list this parameter and allows no others (additionalProperties: false)`,
		}},
		{name: "not an object", params: `"reader"`, want: []string{
			`spec.parameters: Invalid value: "reader": must be a JSON object that maps parameter names to values, not a string`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, messages(s.ValidateBind(ext(tt.params), paramsPath)))
		})
	}
}

// TestConcurrentUse checks that compiled schemas may serve many requests at
// once (run with -race).
func TestConcurrentUse(t *testing.T) {
	s := mustCompile(t, benchCreate, benchUpdate, benchCreate)
	old, changed := ext(benchOld), ext(strings.Replace(benchNew, `"eu"`, `"us"`, 1))
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 50 {
				assert.Empty(t, s.ValidateProvision(old, paramsPath))
				assert.Empty(t, s.ValidateBind(old, paramsPath))
				assert.Len(t, s.ValidateUpdate(old, changed, paramsPath), 1)
				_, err := s.UpdateParameters(changed)
				assert.NoError(t, err)
			}
		})
	}
	wg.Wait()
}
