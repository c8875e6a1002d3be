package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/test/fuzzrun"
)

// The differential test of quickValid, the partial evaluator that spares
// most admission requests the JSON Schema library
// (santhosh-tekuri/jsonschema/v6): on any schema Compile accepts and any
// value, quickValid says "valid" only when the library does, and the
// check that admission runs (quickValid, then the library) says "valid"
// exactly when the library does on the same value as the library's own
// decoder reads it. quickValid reports no errors (the library explains
// every value it refuses), so there are no error paths of its own to
// compare.
//
// The domain: schemas that Compile accepts (every draft), values within
// the limits of decodeJSON (the admission check refuses the rest before
// any schema is looked at).
//
// The seeds are real schemas with values: the example bundles' plans, the
// test broker's catalog, and FuzzValidate's corpus. Inputs that are not
// JSON drive generators of schemas (the keywords quickValid knows, and a
// few it does not) and of values.

var quickTarget = fuzzrun.Target{
	Name:   "FuzzQuickValid",
	Inputs: 1500,
}

func init() {
	quickTarget.Seeds = quickSeeds()
}

// quickSeeds are real schemas, each with values that pass or fail them.
func quickSeeds() [][][]byte {
	var seeds [][][]byte
	add := func(schema []byte, values ...string) {
		for _, v := range values {
			seeds = append(seeds, [][]byte{schema, []byte(v)})
		}
	}
	bundles, _ := filepath.Glob("../../../examples/bundles/*/bundle.json")
	sort.Strings(bundles)
	for _, f := range bundles {
		var b struct {
			Plans []struct {
				Schemas map[string]json.RawMessage `json:"schemas"`
			} `json:"plans"`
		}
		data, err := os.ReadFile(f)
		if err != nil || json.Unmarshal(data, &b) != nil {
			continue
		}
		for _, p := range b.Plans {
			for _, k := range []string{"create", "update", "bind"} {
				if s := p.Schemas[k]; s != nil {
					add(s, `{}`, `{"size":5,"region":"eu"}`, `{"size":0,"region":"mars"}`, `{"seconds":30,"zone":"a"}`,
						`{"engine":"postgres","connections":10.0}`, `{"fail":"none","admin":true}`, `{"x":[1,2]}`)
				}
			}
		}
	}
	cat := fakebroker.DefaultCatalog()
	for _, s := range cat.Services {
		for _, p := range s.Plans {
			if p.Schemas == nil || p.Schemas.ServiceInstance == nil {
				continue
			}
			for _, in := range []json.RawMessage{p.Schemas.ServiceInstance.Create.Parameters, p.Schemas.ServiceInstance.Update.Parameters} {
				add(in, `{}`, `{"storageGB":10,"region":"eu","version":"16"}`, `{"storageGB":1e1}`, `{"storageGB":-1}`, `{"region":7}`)
			}
		}
	}
	validate, _ := fuzzrun.Corpus("FuzzValidate")
	for _, in := range validate {
		if len(in) == 4 {
			add(in[0], string(in[2]), string(in[3]))
			add(in[1], string(in[3]))
		}
	}
	return seeds
}

func FuzzQuickValid(f *testing.F) {
	fuzzrun.Add(f, quickTarget)
	f.Fuzz(func(t *testing.T, schema, value []byte) { checkQuick(t, schema, value) })
}

func TestQuickValidAgreesWithTheLibraryOnAnyInput(t *testing.T) {
	fuzzrun.Run(t, quickTarget, func(t *testing.T, in [][]byte) { checkQuick(t, in[0], in[1]) })
}

func checkQuick(t *testing.T, schemaIn, valueIn []byte) {
	schemaText, valueText := schemaIn, valueIn
	if !json.Valid(schemaIn) {
		g := &schemaGen{Choices: fuzzrun.Choices{Data: schemaIn}}
		schemaText = []byte(g.schema())
	}
	if !json.Valid(valueIn) {
		g := &schemaGen{Choices: fuzzrun.Choices{Data: valueIn}}
		valueText = []byte(g.value(0))
	}
	c, err := compileOne(createParams, schemaText)
	if err != nil || c == nil {
		return // not a schema Compile accepts
	}
	doc, beyond, err := decodeJSON(valueText)
	if err != nil || beyond {
		return
	}
	libDoc, err := jsonschema.UnmarshalJSON(bytes.NewReader(valueText))
	if err != nil {
		t.Fatalf("the library cannot read %s, which decodeJSON reads: %v", valueText, err)
	}
	libErr, panicked := libraryValidate(c.schema, libDoc)
	if panicked {
		return // the admission check reports the library's failure as such
	}
	if quickValid(c.schema, doc, 0) && libErr != nil {
		t.Fatalf("quickValid accepts %s against %s; the library refuses it: %v", valueText, schemaText, libErr)
	}
	if libErr == nil && !quickValid(c.schema, doc, 0) && supportedThroughout(c.schema, map[*jsonschema.Schema]bool{}) {
		t.Fatalf("quickValid is not sure of %s against %s, whose keywords it all knows; the library accepts it", valueText, schemaText)
	}
	if obj, ok := doc.(object); ok {
		errs := c.validate(params{obj: obj}, paramsPath)
		if (len(errs) == 0) != (libErr == nil) {
			t.Fatalf("the admission check of %s against %s finds %v; the library %v", valueText, schemaText, errs, libErr)
		}
	}
}

// libraryValidate runs the library on a value it decoded itself.
func libraryValidate(s *jsonschema.Schema, v any) (err error, panicked bool) {
	defer func() {
		if r := recover(); r != nil {
			panicked = true
		}
	}()
	return s.Validate(v), false
}

// supportedThroughout reports whether quickValid knows every keyword of s
// and of every schema s leads to.
func supportedThroughout(s *jsonschema.Schema, seen map[*jsonschema.Schema]bool) bool {
	if s == nil || seen[s] || s.Bool != nil {
		return true
	}
	seen[s] = true
	if !quickSupported(s) {
		return false
	}
	subs := []*jsonschema.Schema{s.Ref, s.Items2020}
	if sub, ok := s.AdditionalItems.(*jsonschema.Schema); ok {
		subs = append(subs, sub)
	}
	subs = append(subs, s.AllOf...)
	subs = append(subs, s.AnyOf...)
	subs = append(subs, s.PrefixItems...)
	for _, sub := range s.Properties {
		subs = append(subs, sub)
	}
	for _, sub := range s.PatternProperties {
		subs = append(subs, sub)
	}
	for _, sub := range s.DependentSchemas {
		subs = append(subs, sub)
	}
	for _, dep := range s.Dependencies {
		if sub, ok := dep.(*jsonschema.Schema); ok {
			subs = append(subs, sub)
		}
	}
	if sub, ok := s.AdditionalProperties.(*jsonschema.Schema); ok {
		subs = append(subs, sub)
	}
	switch x := s.Items.(type) {
	case *jsonschema.Schema:
		subs = append(subs, x)
	case []*jsonschema.Schema:
		subs = append(subs, x...)
	}
	for _, sub := range subs {
		if !supportedThroughout(sub, seen) {
			return false
		}
	}
	return true
}

// schemaGen writes schemas and values from bytes that are not JSON.
type schemaGen struct {
	fuzzrun.Choices
}

func (g *schemaGen) one(values ...string) string { return values[g.Pick(len(values))] }

var genDrafts = []string{"", `"$schema":"http://json-schema.org/draft-04/schema#",`, `"$schema":"http://json-schema.org/draft-06/schema#",`,
	`"$schema":"http://json-schema.org/draft-07/schema#",`, `"$schema":"https://json-schema.org/draft/2019-09/schema",`,
	`"$schema":"https://json-schema.org/draft/2020-12/schema",`}

// schema writes a schema with a draft and definitions to refer to.
func (g *schemaGen) schema() string {
	body := g.sub(0)
	draft := genDrafts[g.Pick(len(genDrafts))]
	defs := fmt.Sprintf(`"definitions":{"d":%s},"$defs":{"e":%s}`, g.sub(2), g.sub(2))
	if body == "true" || body == "false" {
		return body
	}
	return "{" + draft + defs + "," + strings.TrimPrefix(body, "{")
}

// sub writes a subschema; depth bounds nesting.
func (g *schemaGen) sub(depth int) string {
	if depth > 3 || g.Pick(8) == 0 {
		return g.one("true", "false", "{}")
	}
	var kw []string
	for range 1 + g.Pick(3) {
		kw = append(kw, g.keyword(depth))
	}
	return "{" + strings.Join(kw, ",") + "}"
}

func (g *schemaGen) keyword(depth int) string {
	num := func() string { return g.one("0", "1", "-1", "2.5", "1e2", "10", "0.5", "3", "9007199254740993") }
	count := func() string { return g.one("0", "1", "2", "3") }
	names := func() string { return g.one(`"a"`, `"b"`, `"c"`, `"x_1"`) }
	switch g.Pick(36) {
	case 0:
		return `"type":` + g.one(`"string"`, `"integer"`, `"number"`, `"object"`, `"array"`, `"boolean"`, `"null"`, `["integer","null"]`, `["string","number"]`)
	case 1:
		return `"enum":[` + g.value(2) + "," + g.value(2) + `]`
	case 2:
		return `"const":` + g.value(2)
	case 3:
		return `"format":` + g.one(`"email"`, `"date"`, `"date-time"`, `"ipv4"`, `"uri"`, `"uuid"`, `"regex"`, `"hostname"`, `"unknown-format"`)
	case 4:
		return `"$ref":` + g.one(`"#/definitions/d"`, `"#/$defs/e"`, `"#"`)
	case 5, 6:
		return `"properties":{` + names() + ":" + g.sub(depth+1) + "," + names() + ":" + g.sub(depth+1) + "}"
	case 7:
		return `"patternProperties":{"` + g.one("^x_", "a", "^[a-b]$", "") + `":` + g.sub(depth+1) + "}"
	case 8:
		return `"additionalProperties":` + g.one("true", "false", g.sub(depth+1))
	case 9:
		return `"required":[` + names() + `]`
	case 10:
		return `"minProperties":` + count()
	case 11:
		return `"maxProperties":` + count()
	case 12:
		return `"dependencies":{` + names() + ":" + g.one(`["a"]`, `["b","c"]`, g.sub(depth+1)) + "}"
	case 13:
		return `"dependentRequired":{` + names() + `:["b"]}`
	case 14:
		return `"dependentSchemas":{` + names() + ":" + g.sub(depth+1) + "}"
	case 15:
		return `"items":` + g.one(g.sub(depth+1), "["+g.sub(depth+1)+"]", "false")
	case 16:
		return `"additionalItems":` + g.one("true", "false", g.sub(depth+1))
	case 17:
		return `"prefixItems":[` + g.sub(depth+1) + `]`
	case 18:
		return `"uniqueItems":` + g.one("true", "false")
	case 19:
		return `"minItems":` + count()
	case 20:
		return `"maxItems":` + count()
	case 21:
		return `"minLength":` + count()
	case 22:
		return `"maxLength":` + count()
	case 23:
		return `"pattern":` + g.one(`"^a"`, `"b$"`, `"^[a-z]*$"`, `"é"`, `"\\d"`)
	case 24:
		return `"minimum":` + num()
	case 25:
		return `"maximum":` + num()
	case 26:
		return `"exclusiveMinimum":` + g.one(num(), "true", "false")
	case 27:
		return `"exclusiveMaximum":` + g.one(num(), "true", "false")
	case 28:
		return `"multipleOf":` + g.one("0.5", "2", "0.1", "3", "1e-2")
	case 29:
		return `"allOf":[` + g.sub(depth+1) + "," + g.sub(depth+1) + "]"
	case 30:
		return `"anyOf":[` + g.sub(depth+1) + "," + g.sub(depth+1) + "]"
	case 31:
		return `"oneOf":[` + g.sub(depth+1) + "," + g.sub(depth+1) + "]"
	case 32:
		return `"not":` + g.sub(depth+1)
	case 33:
		return `"if":` + g.sub(depth+1) + `,"then":` + g.sub(depth+1)
	case 34:
		return `"contains":` + g.sub(depth+1)
	default:
		return `"default":` + g.value(2)
	}
}

// value writes a JSON value from small sets, so that schemas and values
// often meet.
func (g *schemaGen) value(depth int) string {
	switch k := g.Pick(9); {
	case k == 0 && depth < 3:
		var items []string
		for range g.Pick(4) {
			items = append(items, g.value(depth+1))
		}
		return "[" + strings.Join(items, ",") + "]"
	case k <= 2 && depth < 3:
		var members []string
		for range g.Pick(4) {
			members = append(members, g.one(`"a"`, `"b"`, `"c"`, `"x_1"`, `"é"`)+":"+g.value(depth+1))
		}
		return "{" + strings.Join(members, ",") + "}"
	case k <= 4:
		return g.one(`""`, `"a"`, `"ab"`, `"abc"`, `"é"`, `"a@b.example"`, `"2026-01-02"`, `"2026-01-02T03:04:05Z"`, `"10.0.0.1"`, `"x_1"`, `"\u0000"`)
	case k <= 7:
		return g.one("0", "1", "1.0", "-1", "2.5", "1e2", "10", "3", "0.5", "2.25", "9007199254740993", "-0", "1e-2")
	default:
		return g.one("true", "false", "null")
	}
}
