package schema

import (
	"testing"

	"github.com/lockstep-dev/lockstep/bench/cputime"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// benchCreate and benchUpdate are a typical plan: scalar parameters, an
// enum, a nested object, and a create-only region.
const (
	benchCreate = `{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "type": "object",
  "required": ["version"],
  "additionalProperties": false,
  "properties": {
    "region":    {"type": "string", "enum": ["eu", "us", "ap"]},
    "version":   {"type": "string", "pattern": "^[0-9]+$"},
    "storageGB": {"type": "integer", "minimum": 1, "maximum": 1024},
    "replicas":  {"type": "integer", "minimum": 1, "maximum": 9},
    "highAvailability": {"type": "boolean"},
    "tags":      {"type": "array", "items": {"type": "string", "maxLength": 63}, "maxItems": 16},
    "backup": {
      "type": "object",
      "additionalProperties": false,
      "properties": {
        "enabled":   {"type": "boolean"},
        "schedule":  {"type": "string", "minLength": 1},
        "retention": {"type": "integer", "minimum": 1}
      }
    }
  }
}`
	benchUpdate = `{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "version":   {"type": "string", "pattern": "^[0-9]+$"},
    "storageGB": {"type": "integer", "minimum": 1, "maximum": 1024},
    "replicas":  {"type": "integer", "minimum": 1, "maximum": 9},
    "highAvailability": {"type": "boolean"},
    "tags":      {"type": "array", "items": {"type": "string", "maxLength": 63}, "maxItems": 16},
    "backup": {
      "type": "object",
      "additionalProperties": false,
      "properties": {
        "enabled":   {"type": "boolean"},
        "schedule":  {"type": "string", "minLength": 1},
        "retention": {"type": "integer", "minimum": 1}
      }
    }
  }
}`
	benchOld = `{"region":"eu","version":"16","storageGB":100,"replicas":3,"highAvailability":true,"tags":["team-a","prod"],"backup":{"enabled":true,"schedule":"0 3 * * *","retention":7}}`
	benchNew = `{"region":"eu","version":"17","storageGB":200,"replicas":3,"highAvailability":true,"tags":["team-a","prod"],"backup":{"enabled":true,"schedule":"0 4 * * *","retention":14}}`
)

func benchSchemas(b *testing.B) *PlanSchemas {
	s, err := Compile([]byte(benchCreate), []byte(benchUpdate), nil)
	require.NoError(b, err)
	require.Equal(b, []string{"region"}, s.CreateOnly())
	return s
}

func BenchmarkValidateProvision(b *testing.B) {
	s := benchSchemas(b)
	params := &runtime.RawExtension{Raw: []byte(benchOld)}
	path := field.NewPath("spec", "parameters")
	require.Empty(b, s.ValidateProvision(params, path))
	b.ReportAllocs()
	stopCPU := cputime.Start(b)
	for b.Loop() {
		if errs := s.ValidateProvision(params, path); len(errs) != 0 {
			b.Fatal(errs)
		}
	}
	stopCPU()
}

func BenchmarkValidateUpdate(b *testing.B) {
	s := benchSchemas(b)
	old, new := &runtime.RawExtension{Raw: []byte(benchOld)}, &runtime.RawExtension{Raw: []byte(benchNew)}
	path := field.NewPath("spec", "parameters")
	require.Empty(b, s.ValidateUpdate(old, new, path))
	b.ReportAllocs()
	stopCPU := cputime.Start(b)
	for b.Loop() {
		if errs := s.ValidateUpdate(old, new, path); len(errs) != 0 {
			b.Fatal(errs)
		}
	}
	stopCPU()
}

// BenchmarkDecodeJSON compares decodeJSON with what it replaces,
// encoding/json with UseNumber; both run under the same conditions, so the
// ratio holds on a busy machine too.
func BenchmarkDecodeJSON(b *testing.B) {
	data := []byte(benchOld)
	b.Run("decodeJSON", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := decodeJSON(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := stdDecode(data); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkSchemaCheck compares quickValid with the library's validator on
// valid parameters, the case quickValid exists for.
func BenchmarkSchemaCheck(b *testing.B) {
	s := benchSchemas(b)
	p, perr := decodeParams(ext(benchOld))
	require.Nil(b, perr)
	b.Run("quickValid", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if !quickValid(s.create.schema, p.obj, 0) {
				b.Fatal("quickValid is not sure")
			}
		}
	})
	b.Run("library", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := s.create.schema.Validate(p.obj); err != nil {
				b.Fatal(err)
			}
		}
	})
}
