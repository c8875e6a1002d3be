package schema

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestQuickValidAgreesWithTheLibrary checks quickValid keyword by keyword:
// it must never call valid what the library refuses, and for the keywords
// it knows it should be sure of what the library accepts.
func TestQuickValidAgreesWithTheLibrary(t *testing.T) {
	const (
		d04   = `"$schema": "http://json-schema.org/draft-04/schema#", `
		d07   = `"$schema": "http://json-schema.org/draft-07/schema#", `
		d2019 = `"$schema": "https://json-schema.org/draft/2019-09/schema", `
		d2020 = `"$schema": "https://json-schema.org/draft/2020-12/schema", `
	)
	tests := []struct {
		name, schema, value string
		valid               bool // the library's answer
		quickSure           bool // quickValid answers true (only where valid)
	}{
		{"true schema", `true`, `1`, true, true},
		{"false schema", `false`, `1`, false, false},
		{"type", `{"type": "string"}`, `"a"`, true, true},
		{"type mismatch", `{"type": "string"}`, `1`, false, false},
		{"type list", `{"type": ["string", "null"]}`, `null`, true, true},
		{"integer", `{"type": "integer"}`, `3`, true, true},
		{"integer written with a fraction", `{"type": "integer"}`, `3.0`, true, true},
		{"integer written with an exponent", `{"type": "integer"}`, `1.5e1`, true, true},
		{"not an integer", `{"type": "integer"}`, `1.5`, false, false},
		{"not an integer, small exponent", `{"type": "integer"}`, `15e-1`, false, false},
		{"number is not integer", `{"type": "number"}`, `1.5`, true, true},
		{"const number spelled differently", `{` + d07 + `"const": 1}`, `1.0`, true, true},
		{"const object", `{` + d07 + `"const": {"a": [1]}}`, `{"a": [1.0]}`, true, true},
		{"const mismatch", `{` + d07 + `"const": 1}`, `2`, false, false},
		{"enum", `{"enum": ["a", 2, null]}`, `2.0`, true, true},
		{"enum mismatch", `{"enum": ["a", 2, null]}`, `"b"`, false, false},
		{"format asserted", `{` + d07 + `"format": "email"}`, `"a@example.com"`, true, true},
		{"format fails", `{` + d07 + `"format": "email"}`, `"nobody"`, false, false},
		{"format on another type", `{` + d07 + `"format": "email"}`, `5`, true, true},
		{"minimum", `{"minimum": 1}`, `1`, true, true},
		{"minimum fails", `{"minimum": 1}`, `0.999`, false, false},
		{"maximum with fraction", `{"maximum": 1.5}`, `1.5`, true, true},
		{"maximum fails with exponent", `{"maximum": 100}`, `1e3`, false, false},
		{"beyond int64", `{"maximum": 9223372036854775807}`, `9223372036854775808`, false, false},
		{"beyond int64 fits", `{"minimum": 9223372036854775807}`, `9223372036854775808`, true, true},
		{"negative", `{"minimum": -5}`, `-5`, true, true},
		{"draft-04 exclusive", `{` + d04 + `"maximum": 5, "exclusiveMaximum": true}`, `5`, false, false},
		{"draft-06+ exclusive", `{` + d07 + `"exclusiveMinimum": 0}`, `0.0001`, true, true},
		{"draft-06+ exclusive fails", `{` + d07 + `"exclusiveMinimum": 0}`, `0`, false, false},
		{"multipleOf", `{"multipleOf": 0.5}`, `2.5`, true, true},
		{"multipleOf fails", `{"multipleOf": 0.5}`, `2.25`, false, false},
		{"minLength counts characters", `{"minLength": 3, "maxLength": 3}`, `"éàü"`, true, true},
		{"maxLength fails", `{"maxLength": 2}`, `"éàü"`, false, false},
		{"pattern", `{"pattern": "^[a-z]+$"}`, `"abc"`, true, true},
		{"pattern fails", `{"pattern": "^[a-z]+$"}`, `"aBc"`, false, false},
		{"required", `{"required": ["a"]}`, `{"a": null}`, true, true},
		{"required fails", `{"required": ["a"]}`, `{}`, false, false},
		{"min and max properties", `{"minProperties": 1, "maxProperties": 1}`, `{"a": 1}`, true, true},
		{"maxProperties fails", `{"maxProperties": 1}`, `{"a": 1, "b": 2}`, false, false},
		{"properties", `{"properties": {"a": {"type": "string"}}}`, `{"a": "x", "b": 1}`, true, true},
		{"properties fail", `{"properties": {"a": {"type": "string"}}}`, `{"a": 1}`, false, false},
		{"patternProperties", `{"patternProperties": {"^x_": {"type": "integer"}}}`, `{"x_a": 1}`, true, true},
		{"patternProperties fail", `{"patternProperties": {"^x_": {"type": "integer"}}}`, `{"x_a": "1"}`, false, false},
		{"additionalProperties false", `{"properties": {"a": {}}, "patternProperties": {"^x_": {}}, "additionalProperties": false}`, `{"a": 1, "x_b": 2}`, true, true},
		{"additionalProperties false fails", `{"properties": {"a": {}}, "additionalProperties": false}`, `{"a": 1, "b": 2}`, false, false},
		{"additionalProperties schema", `{"additionalProperties": {"type": "string"}}`, `{"a": "x"}`, true, true},
		{"additionalProperties schema fails", `{"additionalProperties": {"type": "string"}}`, `{"a": 1}`, false, false},
		{"dependencies list", `{"dependencies": {"a": ["b"]}}`, `{"a": 1, "b": 2}`, true, true},
		{"dependencies list fails", `{"dependencies": {"a": ["b"]}}`, `{"a": 1}`, false, false},
		{"dependencies schema fails", `{"dependencies": {"a": {"required": ["c"]}}}`, `{"a": 1}`, false, false},
		{"dependentRequired fails", `{` + d2019 + `"dependentRequired": {"a": ["b"]}}`, `{"a": 1}`, false, false},
		{"dependentSchemas", `{` + d2019 + `"dependentSchemas": {"a": {"maxProperties": 2}}}`, `{"a": 1, "b": 2}`, true, true},
		{"dependentSchemas fail", `{` + d2019 + `"dependentSchemas": {"a": {"maxProperties": 1}}}`, `{"a": 1, "b": 2}`, false, false},
		{"items", `{"items": {"type": "integer"}, "minItems": 1, "maxItems": 3}`, `[1, 2]`, true, true},
		{"items fail", `{"items": {"type": "integer"}}`, `[1, "2"]`, false, false},
		{"minItems fails", `{"minItems": 1}`, `[]`, false, false},
		{"tuple items and additionalItems", `{"items": [{"type": "string"}], "additionalItems": {"type": "integer"}}`, `["a", 1, 2]`, true, true},
		{"tuple additionalItems false fails", `{"items": [{"type": "string"}], "additionalItems": false}`, `["a", 1]`, false, false},
		{"2020 prefixItems and items", `{` + d2020 + `"prefixItems": [{"type": "string"}], "items": {"type": "integer"}}`, `["a", 1]`, true, true},
		{"2020 items fail", `{` + d2020 + `"prefixItems": [{"type": "string"}], "items": false}`, `["a", 1]`, false, false},
		{"uniqueItems", `{"uniqueItems": true}`, `[1, "1", [1], {"a": 1}]`, true, true},
		{"uniqueItems fails on equal numbers", `{"uniqueItems": true}`, `[1, 1.0]`, false, false},
		{"draft-07 $ref ignores its siblings", `{` + d07 + `"definitions": {"s": {"type": "string"}}, "properties": {"a": {"$ref": "#/definitions/s", "maxLength": 1}}}`, `{"a": "long"}`, true, true},
		{"2019-09 $ref keeps its siblings", `{` + d2019 + `"$defs": {"s": {"type": "string"}}, "properties": {"a": {"$ref": "#/$defs/s", "maxLength": 1}}}`, `{"a": "long"}`, false, false},
		{"$ref fails", `{"definitions": {"s": {"type": "string"}}, "properties": {"a": {"$ref": "#/definitions/s"}}}`, `{"a": 1}`, false, false},
		{"recursive $ref", `{"properties": {"child": {"$ref": "#"}, "n": {"type": "integer"}}}`, `{"child": {"child": {"n": 1}}}`, true, true},
		{"recursive $ref fails deep down", `{"properties": {"child": {"$ref": "#"}, "n": {"type": "integer"}}}`, `{"child": {"child": {"n": "x"}}}`, false, false},
		{"allOf", `{"allOf": [{"minimum": 1}, {"maximum": 3}]}`, `2`, true, true},
		{"allOf fails", `{"allOf": [{"minimum": 1}, {"maximum": 3}]}`, `4`, false, false},
		{"anyOf", `{"anyOf": [{"type": "string"}, {"minimum": 3}]}`, `4`, true, true},
		{"anyOf fails", `{"anyOf": [{"type": "string"}, {"minimum": 3}]}`, `2`, false, false},
		{"oneOf: left to the library", `{"oneOf": [{"type": "string"}, {"minimum": 3}]}`, `4`, true, false},
		{"not: left to the library", `{"not": {"type": "string"}}`, `4`, true, false},
		{"if: left to the library", `{` + d07 + `"if": {"minimum": 3}, "then": {"maximum": 5}}`, `4`, true, false},
		{"contains: left to the library", `{` + d07 + `"contains": {"type": "string"}}`, `["a"]`, true, false},
		{"propertyNames: left to the library", `{` + d07 + `"propertyNames": {"maxLength": 1}}`, `{"a": 1}`, true, false},
		{"unevaluatedProperties: left to the library", `{` + d2020 + `"properties": {"a": {}}, "unevaluatedProperties": false}`, `{"a": 1}`, true, false},
		{"unsupported keyword where the value does not go", `{"properties": {"a": {"not": {}}, "b": {"type": "integer"}}}`, `{"b": 1}`, true, true},
		{"$ref cycle without progress", `{"definitions": {"a": {"$ref": "#/definitions/b"}, "b": {"$ref": "#/definitions/a"}}, "properties": {"x": {"$ref": "#/definitions/a"}}}`, `{"x": 1}`, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustCompile(t, tt.schema, "", "")
			v, beyond, err := decodeJSON([]byte(tt.value))
			require.NoError(t, err)
			require.False(t, beyond)
			libErr := s.create.schema.Validate(v)
			require.Equal(t, tt.valid, libErr == nil, "the library: %v", libErr)
			quick := quickValid(s.create.schema, v, 0)
			assert.Equal(t, tt.quickSure, quick)
			if quick {
				assert.NoError(t, libErr, "quickValid must never accept what the library refuses")
			}
		})
	}
}
