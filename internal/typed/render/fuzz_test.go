package render

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/runtime"
	kjson "k8s.io/apimachinery/pkg/util/json"

	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
	"github.com/lockstep-dev/lockstep/internal/validate/schema"
	"github.com/lockstep-dev/lockstep/test/fuzzrun"
)

// The fuzz test of the projection: for random plan schemas (create and
// update, of every draft, with the keywords a CRD schema can hold and
// those it cannot), Render never panics, its CRD passes the API server's
// CRD validation without falling back for that reason, and every value
// that a plan's create schema accepts (as lockstep's webhook checks it)
// the CRD schema of spec.parameters accepts too (pruned and validated as
// the API server does): the CRD is never stricter than the broker.
//
// An input is a stream of choices that drives the generators of schemas
// and of values; the seeds are fixed byte strings.

var renderTarget = fuzzrun.Target{
	Name:   "FuzzRender",
	Inputs: 150,
	Seeds: [][][]byte{
		{[]byte("seed")},
		{[]byte("\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f")},
		{[]byte("the quick brown fox jumps over the lazy dog, twice: the quick brown fox")},
		{[]byte(strings.Repeat("\x07\x03\x11", 40))},
		{[]byte(strings.Repeat("\xff\x80\x41", 40))},
		{[]byte("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"}}}")},
	},
}

func FuzzRender(f *testing.F) {
	fuzzrun.Add(f, renderTarget)
	f.Fuzz(func(t *testing.T, in []byte) { checkRender(t, in) })
}

func TestRenderIsNeverStricterOnAnyInput(t *testing.T) {
	fuzzrun.Run(t, renderTarget, func(t *testing.T, in [][]byte) { checkRender(t, in[0]) })
}

func checkRender(t *testing.T, in []byte) {
	g := &gen{Choices: fuzzrun.Choices{Data: in}}
	g.defs = g.pick(3)
	draft := []string{"", "http://json-schema.org/draft-04/schema#", "http://json-schema.org/draft-07/schema#", "https://json-schema.org/draft/2020-12/schema"}[g.pick(4)]
	g.draft07 = draft != "http://json-schema.org/draft-04/schema#"
	var plans []osbapi.Plan
	var creates []map[string]any
	for i := range 1 + g.pick(2) {
		create := g.root(draft)
		creates = append(creates, create)
		var update map[string]any
		if g.pick(2) == 0 {
			update = g.updateOf(create)
		}
		plans = append(plans, osbapi.Plan{ID: fmt.Sprint("p", i), Name: fmt.Sprint("plan-", i), Schemas: schemasOf(create, update)})
	}
	svc := &osbapi.Service{ID: "fuzz", Name: "fuzz-service", Plans: plans, PlanUpdateable: g.pick(2) == 0}
	crd, report, err := Render("broker", svc, Options{})
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	if errs := Validate(crd); len(errs) > 0 {
		t.Fatalf("the API server would refuse the CRD: %v\nschemas: %s", errs.ToAggregate(), jsonOf(creates))
	}
	for _, p := range report.Problems {
		if strings.Contains(p, "would not take") {
			t.Fatalf("the projection made a schema the API server refuses: %s\nschemas: %s", p, jsonOf(creates))
		}
	}
	params := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["parameters"]
	check := structuralCheck(t, &params)
	for i, create := range creates {
		ps, err := schema.Compile(mustJSON(create), nil, nil)
		if err != nil {
			continue // the plan is left out, and its instances refused
		}
		for range 8 {
			value, isObject := g.value(create, 0).(map[string]any)
			if !isObject {
				continue // parameters are an object; lockstep refuses the rest first
			}
			raw := mustJSON(value)
			if len(ps.ValidateProvision(&runtime.RawExtension{Raw: raw}, nil)) > 0 {
				continue
			}
			if errs := check(raw); errs != "" {
				t.Fatalf("plan %d's schema accepts %s, the CRD refuses it: %s\nschema: %s\nCRD schema: %s", i, raw, errs, jsonOf(create), jsonOf(params))
			}
		}
	}
}

// structuralCheck returns a check of a value against a CRD schema as the
// API server runs it on a create: decode, prune, validate.
func structuralCheck(t *testing.T, s *apiextensionsv1.JSONSchemaProps) func(raw []byte) string {
	var internal apiextensions.JSONSchemaProps
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(s, &internal, nil); err != nil {
		t.Fatalf("converting the schema: %v", err)
	}
	structural, err := structuralschema.NewStructural(&internal)
	if err != nil {
		t.Fatalf("the schema is not structural: %v", err)
	}
	validator, _, err := apiservervalidation.NewSchemaValidator(&internal)
	if err != nil {
		t.Fatalf("no validator for the schema: %v", err)
	}
	return func(raw []byte) string {
		var v any
		if err := kjson.Unmarshal(raw, &v); err != nil {
			return "cannot decode: " + err.Error()
		}
		pruning.Prune(v, structural, false)
		if errs := apiservervalidation.ValidateCustomResource(nil, v, validator); len(errs) > 0 {
			return errs.ToAggregate().Error()
		}
		return ""
	}
}

func schemasOf(create, update map[string]any) *osbapi.Schemas {
	s := &osbapi.ServiceInstanceSchemas{Create: &osbapi.InputParameters{Parameters: mustJSON(create)}}
	if update != nil {
		s.Update = &osbapi.InputParameters{Parameters: mustJSON(update)}
	}
	return &osbapi.Schemas{ServiceInstance: s}
}

func mustJSON(v any) []byte {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return raw
}

func jsonOf(v any) string { return string(mustJSON(v)) }

// gen generates schemas and values from a stream of choices.
type gen struct {
	fuzzrun.Choices
	defs    int  // how many definitions the root has
	draft07 bool // numeric exclusive bounds, const, boolean schemas
	nodes   int
}

func (g *gen) pick(n int) int { return g.Pick(n) }

var names = []string{"a", "size", "db-name", "in", "x.y", "__z", "namespace", "Region", "k8s/app"}

// root is a plan schema: an object, with definitions.
func (g *gen) root(draft string) map[string]any {
	s := g.object(0)
	if draft != "" {
		s["$schema"] = draft
	}
	if g.defs > 0 {
		defs := map[string]any{}
		for i := range g.defs {
			defs[fmt.Sprint("d", i)] = g.schema(2)
		}
		s["definitions"] = defs
	}
	return s
}

// schema is a subschema depth levels down.
func (g *gen) schema(depth int) any {
	g.nodes++
	if depth > 4 || g.nodes > 60 {
		return map[string]any{"type": "string"}
	}
	switch g.pick(20) {
	case 0:
		if g.draft07 {
			return g.pick(3) != 0 // boolean schema, mostly true
		}
		return map[string]any{}
	case 1:
		if g.defs > 0 {
			return map[string]any{"$ref": fmt.Sprint("#/definitions/d", g.pick(g.defs))}
		}
		return map[string]any{"$ref": "#"}
	case 2:
		return map[string]any{"anyOf": []any{g.schema(depth + 1), g.schema(depth + 1)}}
	case 3:
		return map[string]any{"oneOf": []any{g.schema(depth + 1), g.schema(depth + 1)}}
	case 4:
		s := g.typed(depth)
		s["allOf"] = []any{g.schema(depth + 1)}
		return s
	case 5:
		s := g.typed(depth)
		s["not"] = g.schema(depth + 1)
		return s
	case 6:
		return map[string]any{"if": g.schema(depth + 1), "then": g.schema(depth + 1), "else": g.schema(depth + 1)}
	case 7:
		return map[string]any{"enum": []any{"a", 1, 2.5, true, nil, map[string]any{"k": 1}}[g.pick(4):]}
	case 8:
		if g.draft07 {
			return map[string]any{"const": []any{"x", 3, false, 1.5}[g.pick(4)]}
		}
		return map[string]any{"enum": []any{"x"}}
	case 9:
		s := g.typed(depth)
		s["type"] = []any{s["type"], []string{"null", "string", "integer"}[g.pick(3)]}
		return s
	}
	return g.typed(depth)
}

// typed is a schema with one type and that type's keywords.
func (g *gen) typed(depth int) map[string]any {
	switch g.pick(6) {
	case 0:
		return g.object(depth)
	case 1:
		s := map[string]any{"type": "array"}
		switch g.pick(4) {
		case 0:
			s["items"] = []any{g.schema(depth + 1), g.schema(depth + 1)}
		case 1:
		default:
			s["items"] = g.schema(depth + 1)
		}
		g.maybe(s, "minItems", g.pick(3))
		g.maybe(s, "maxItems", 1+g.pick(5))
		g.maybe(s, "uniqueItems", true)
		return s
	case 2:
		s := map[string]any{"type": "string"}
		g.maybe(s, "minLength", g.pick(4))
		g.maybe(s, "maxLength", 2+g.pick(10))
		g.maybe(s, "pattern", []string{"^[a-z]+$", "a", "^\\d{2}$", "[[:alpha:]]", "é"}[g.pick(5)])
		g.maybe(s, "format", []string{"email", "date-time", "uuid", "ipv4", "ipv6", "date", "password", "hostname", "uri"}[g.pick(9)])
		g.maybe(s, "enum", []any{"a", "b", "abc"})
		g.maybe(s, "default", "a")
		g.maybe(s, "writeOnly", true)
		return s
	case 3, 4:
		s := map[string]any{"type": []string{"integer", "number"}[g.pick(2)]}
		g.bounds(s)
		g.maybe(s, "multipleOf", []any{2, 0.5, 0.1, 3}[g.pick(4)])
		g.maybe(s, "enum", []any{1, 2, 2.5, 1e3})
		return s
	}
	return map[string]any{"type": "boolean", "description": "a switch"}
}

func (g *gen) bounds(s map[string]any) {
	lo, hi := []any{-1, 0, 1, 0.5, 1e300, 9007199254740993}[g.pick(6)], []any{10, 2.5, 100, 1e308}[g.pick(4)]
	switch g.pick(4) {
	case 0:
		s["minimum"], s["maximum"] = lo, hi
	case 1:
		if g.draft07 {
			s["exclusiveMinimum"], s["exclusiveMaximum"] = lo, hi
		} else {
			s["minimum"], s["exclusiveMinimum"] = lo, true
		}
	case 2:
		s["maximum"] = hi
	}
}

// object is an object schema.
func (g *gen) object(depth int) map[string]any {
	s := map[string]any{"type": "object"}
	if g.pick(8) == 0 {
		delete(s, "type")
	}
	props := map[string]any{}
	var required []any
	for range g.pick(5) {
		name := names[g.pick(len(names))]
		props[name] = g.schema(depth + 1)
		if g.pick(3) == 0 {
			required = append(required, name)
		}
	}
	if len(props) > 0 {
		s["properties"] = props
	}
	if len(required) > 0 {
		s["required"] = required
	}
	switch g.pick(6) {
	case 0:
		s["additionalProperties"] = false
	case 1:
		s["additionalProperties"] = g.schema(depth + 1)
	case 2:
		s["patternProperties"] = map[string]any{"^x-": g.schema(depth + 1)}
	case 3:
		s["dependencies"] = map[string]any{"a": []any{"size"}}
	}
	g.maybe(s, "minProperties", g.pick(2))
	g.maybe(s, "maxProperties", 2+g.pick(4))
	return s
}

func (g *gen) maybe(s map[string]any, key string, v any) {
	if g.pick(4) == 0 {
		s[key] = v
	}
}

// updateOf is an update schema that knows some of create's properties.
func (g *gen) updateOf(create map[string]any) map[string]any {
	u := map[string]any{"type": "object"}
	if d, ok := create["$schema"]; ok {
		u["$schema"] = d
	}
	if defs, ok := create["definitions"]; ok {
		u["definitions"] = defs
	}
	props, _ := create["properties"].(map[string]any)
	kept := map[string]any{}
	for _, name := range slices.Sorted(maps.Keys(props)) {
		if g.pick(2) == 0 {
			kept[name] = props[name]
		}
	}
	u["properties"] = kept
	if g.pick(2) == 0 {
		u["additionalProperties"] = false
	}
	return u
}

// value is a value for schema s, often one it accepts.
func (g *gen) value(s any, depth int) any {
	m, _ := s.(map[string]any)
	if depth > 5 {
		return "x"
	}
	if e, ok := m["enum"].([]any); ok && len(e) > 0 && g.pick(4) != 0 {
		return e[g.pick(len(e))]
	}
	if c, ok := m["const"]; ok && g.pick(4) != 0 {
		return c
	}
	typ, _ := m["type"].(string)
	if types, ok := m["type"].([]any); ok && len(types) > 0 {
		typ, _ = types[g.pick(len(types))].(string)
	}
	if _, ok := m["properties"]; ok && typ == "" {
		typ = "object"
	}
	if g.pick(10) == 0 || typ == "" {
		typ = []string{"object", "array", "string", "integer", "number", "boolean", "null"}[g.pick(7)]
	}
	switch typ {
	case "object":
		out := map[string]any{}
		props, _ := m["properties"].(map[string]any)
		for _, name := range slices.Sorted(maps.Keys(props)) {
			if g.pick(3) != 0 {
				out[name] = g.value(props[name], depth+1)
			}
		}
		if g.pick(6) == 0 {
			out["x-extra"] = g.value(nil, depth+1)
		}
		return out
	case "array":
		var out []any
		for range g.pick(4) {
			out = append(out, g.value(m["items"], depth+1))
		}
		return out
	case "string":
		return []string{"a", "b", "abc", "", "12", "x-1", "2024-01-02", "550e8400-e29b-41d4-a716-446655440000", "10.0.0.1", "é", "a@b.c"}[g.pick(11)]
	case "integer":
		return json.Number([]string{"0", "1", "2", "3", "10", "-1", "100", "4.0", "1e2", "9007199254740993"}[g.pick(10)])
	case "number":
		return json.Number([]string{"0.5", "2.5", "1", "0", "99.99", "1e-3", "3.0"}[g.pick(7)])
	case "boolean":
		return g.pick(2) == 0
	}
	return nil
}
