package render

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Limits of a projection, so that a huge or hostile schema costs bounded
// time and memory and yields a CRD the API server stores.
const (
	// maxDepth is how deep values nest (properties, items) in the CRD
	// schema; below, values are free JSON.
	maxDepth = 24
	// maxRefs is how many "$ref" a path through the schema follows one
	// inside the other; beyond, the value is free JSON.
	maxRefs = 8
	// maxVisits is how many (sub)schemas one plan's projection looks at in
	// all: a schema whose definitions refer to each other without a cycle
	// may describe exponentially many paths.
	maxVisits = 20000
	// maxProperties is how many properties the CRD schema of the
	// parameters may have in all.
	maxProperties = 2000
	// maxEnum is how many values an enum may have.
	maxEnum = 1000
	// maxSchemaBytes is how large the JSON of the parameters' CRD schema
	// may be (the API server takes objects of up to 3 MiB, etcd values of
	// 1.5 MiB).
	maxSchemaBytes = 512 << 10
)

// formats are the JSON Schema formats that the API server checks no
// stricter than lockstep's schema library: they keep "format" in the CRD
// schema. Others are left to lockstep's webhook ("date-time", "email",
// "hostname" and "uri" are each parsed more strictly by one side or the
// other).
var formats = map[string]bool{"uuid": true, "ipv4": true, "ipv6": true, "date": true, "password": true}

// Drop is a JSON Schema keyword the CRD schema does not keep (the CRD
// accepts more there than the schema; lockstep's webhook checks the
// schema in full), or one it translated.
type Drop struct {
	// Where is the keyword's place: the plan, which of its schemas and
	// the JSON pointer of the subschema ("plan small, create schema,
	// /properties/size"), or the parameter path where plans differ
	// ("spec.parameters.size").
	Where string `json:"where"`
	// Keyword is the JSON Schema keyword ("patternProperties").
	Keyword string `json:"keyword"`
	// Why says why, and what the CRD schema does instead.
	Why string `json:"why"`
}

// String writes the drop on one line.
func (d Drop) String() string { return d.Where + ": " + d.Keyword + ": " + d.Why }

// projector projects one compiled schema into a node.
type projector struct {
	where      string // "plan small, create schema"
	visits     int
	onPath     map[*jsonschema.Schema]bool
	refs       int // "$ref" followed on the current path
	dropped    func(Drop)
	translated func(Drop)
	// exhausted is set when the schema is beyond maxVisits.
	exhausted bool
}

func (p *projector) drop(s *jsonschema.Schema, keyword, format string, args ...any) {
	p.dropped(Drop{Where: p.where + ", " + pointerOf(s), Keyword: keyword, Why: fmt.Sprintf(format, args...)})
}

func (p *projector) translate(s *jsonschema.Schema, keyword, format string, args ...any) {
	p.translated(Drop{Where: p.where + ", " + pointerOf(s), Keyword: keyword, Why: fmt.Sprintf(format, args...)})
}

// pointerOf is the JSON pointer of a subschema within its schema.
func pointerOf(s *jsonschema.Schema) string {
	_, frag, _ := strings.Cut(s.Location, "#")
	if frag == "" {
		return "/"
	}
	return frag
}

// conflict reports what a union or intersection within one schema could
// not keep.
func (p *projector) conflict(at []string, keyword, why string) {
	p.dropped(Drop{Where: p.where + ", " + parameterPath(at), Keyword: keyword, Why: why})
}

// project returns the node of the values s accepts. depth is how many
// objects and arrays enclose the value; root is set for spec.parameters
// itself, which is always a JSON object.
func (p *projector) project(s *jsonschema.Schema, depth int, root bool) *node {
	if s == nil {
		return freeNode()
	}
	p.visits++
	if p.visits > maxVisits {
		p.exhausted = true
		return freeNode()
	}
	if s.Bool != nil {
		if *s.Bool {
			return freeNode()
		}
		return nil
	}
	if depth > maxDepth {
		p.drop(s, "properties", "values nest deeper than %d levels here; the kind keeps them as free JSON", maxDepth)
		return freeNode()
	}
	if p.onPath[s] {
		p.drop(s, "$ref", "the schema refers to itself (recursion); the kind keeps the value as free JSON from here")
		return freeNode()
	}
	p.onPath[s] = true
	defer delete(p.onPath, s)

	n := p.own(s, depth, root)
	at := []string{pointerOf(s)}
	for _, ref := range []*jsonschema.Schema{s.Ref, s.RecursiveRef, dynamicRef(s)} {
		if ref == nil {
			continue
		}
		if p.refs >= maxRefs {
			p.drop(s, "$ref", "more than %d references one inside the other; the kind keeps the value as free JSON from here", maxRefs)
			continue
		}
		p.refs++
		n = meet(n, p.project(ref, depth, root), at, p.conflict)
		p.refs--
	}
	for _, sub := range s.AllOf {
		n = meet(n, p.project(sub, depth, root), at, p.conflict)
	}
	for keyword, branches := range map[string][]*jsonschema.Schema{"anyOf": s.AnyOf, "oneOf": s.OneOf} {
		if len(branches) == 0 {
			continue
		}
		var union *node
		for _, sub := range branches {
			union = join(union, p.project(sub, depth, root), at, p.conflict)
		}
		n = meet(n, union, at, p.conflict)
		p.drop(s, keyword, "the kind accepts what any branch accepts (their union) and does not check that %s holds", map[string]string{
			"anyOf": "at least one branch", "oneOf": "exactly one branch"}[keyword])
	}
	if s.Not != nil {
		p.drop(s, "not", "a CRD schema cannot say what a value must not be")
	}
	if s.If != nil || s.Then != nil || s.Else != nil {
		p.drop(s, "if", "conditional schemas (if, then, else) are not kept")
	}
	return n
}

func dynamicRef(s *jsonschema.Schema) *jsonschema.Schema {
	if s.DynamicRef == nil {
		return nil
	}
	return s.DynamicRef.Ref
}

// own returns the node of s's own keywords, without its applicators.
func (p *projector) own(s *jsonschema.Schema, depth int, root bool) *node {
	descs := descriptions(s)
	sensitive := s.WriteOnly || (s.Format != nil && s.Format.Name == "password")
	if s.Ref != nil && s.DraftVersion < 2019 {
		// Up to draft-07 a "$ref" stands alone: its siblings mean nothing.
		return &node{free: true, descs: descs, sensitive: sensitive}
	}
	typ, nullable, ok := p.typeOf(s, root)
	if !ok {
		return &node{free: true, descs: descs, sensitive: sensitive}
	}
	n := &node{typ: typ, nullable: nullable, descs: descs, sensitive: sensitive}
	p.enum(s, n)
	switch typ {
	case "number", "integer":
		p.numbers(s, n)
	case "string":
		p.strings(s, n)
	case "array":
		p.array(s, n, depth)
	case "object":
		p.object(s, n, depth)
	}
	return n
}

// descriptions are what the CRD schema's description says of s: its
// description (or title), its default, and whether it is deprecated.
func descriptions(s *jsonschema.Schema) []string {
	var descs []string
	switch {
	case s.Description != "":
		descs = append(descs, s.Description)
	case s.Title != "":
		descs = append(descs, s.Title)
	}
	if s.Default != nil {
		descs = append(descs, "Default: "+jsonText(*s.Default)+".")
	}
	if s.Deprecated {
		descs = append(descs, "Deprecated.")
	}
	return descs
}

// typeOf returns the CRD type of s and whether null is allowed; ok false
// when the value is free JSON (any type, or several).
func (p *projector) typeOf(s *jsonschema.Schema, root bool) (typ string, nullable, ok bool) {
	var types []string
	if s.Types != nil {
		types = s.Types.ToStrings()
	}
	if slices.Contains(types, "null") {
		nullable = true
		types = slices.DeleteFunc(types, func(t string) bool { return t == "null" })
		if len(types) > 0 {
			p.translate(s, "type", "null among the types: nullable")
		}
	}
	if slices.Contains(types, "integer") && slices.Contains(types, "number") {
		types = slices.DeleteFunc(types, func(t string) bool { return t == "integer" })
	}
	switch {
	case len(types) == 1:
		return types[0], nullable, true
	case len(types) > 1:
		p.drop(s, "type", "several types (%s) are allowed; the kind keeps the value as free JSON", strings.Join(types, ", "))
		return "", false, false
	case root:
		return "object", false, true
	case nullable:
		return "", false, false
	}
	if t := valuesType(s); t != "" {
		p.translate(s, "type", "no type, but every allowed value is of type %s", t)
		return t, false, true
	}
	if hasConstraints(s) {
		p.drop(s, "type", "no type: the schema allows values of every type here, and the kind keeps the value as free JSON")
	}
	return "", false, false
}

// valuesType is the one type of the values s's enum or const allows;
// empty when there are none or several.
func valuesType(s *jsonschema.Schema) string {
	var values []any
	switch {
	case s.Const != nil:
		values = []any{*s.Const}
	case s.Enum != nil:
		values = s.Enum.Values
	}
	typ := ""
	for _, v := range values {
		t := jsonType(v)
		if t == "" || (typ != "" && t != typ) {
			return ""
		}
		typ = t
	}
	return typ
}

// hasConstraints reports whether s constrains values beyond annotations
// (a schema of descriptions alone loses nothing as free JSON).
func hasConstraints(s *jsonschema.Schema) bool {
	return s.Properties != nil || s.Items != nil || s.Items2020 != nil || s.Required != nil ||
		s.AdditionalProperties != nil || s.MinLength != nil || s.MaxLength != nil || s.Pattern != nil ||
		s.Minimum != nil || s.Maximum != nil || s.ExclusiveMinimum != nil || s.ExclusiveMaximum != nil ||
		s.Enum != nil || s.Const != nil || s.Format != nil || s.MinItems != nil || s.MaxItems != nil
}

// jsonType is the type of a decoded JSON value as a CRD schema names it;
// empty for null, arrays and objects (which an enum cannot hold).
func jsonType(v any) string {
	switch v := v.(type) {
	case string:
		return "string"
	case bool:
		return "boolean"
	case json.Number:
		if isWhole(v) {
			return "integer"
		}
		return "number"
	}
	return ""
}

// enum keeps s's enum or const where its values are scalars of n's type.
func (p *projector) enum(s *jsonschema.Schema, n *node) {
	var values []any
	keyword := "enum"
	switch {
	case s.Const != nil:
		values, keyword = []any{*s.Const}, "const"
	case s.Enum != nil:
		values = s.Enum.Values
	default:
		return
	}
	kept := make([]any, 0, len(values))
	for _, v := range values {
		t := jsonType(v)
		switch {
		case v == nil:
			continue // null is kept as nullable
		case t == "":
			p.drop(s, keyword, "it holds objects or arrays, which the API server compares by type as well as value; lockstep's webhook checks it")
			return
		case !finite(v):
			p.drop(s, keyword, "it holds a number beyond the range of the API server's numbers")
			return
		case t == n.typ || (n.typ == "number" && t == "integer"):
			kept = append(kept, v)
		}
	}
	switch {
	case len(kept) == 0:
		if slices.Contains(values, nil) && n.nullable {
			return // only null among the values of the type: nullable says it
		}
		p.drop(s, keyword, "no value of the type %s is allowed, which a CRD schema cannot say", n.typ)
	case len(kept) > maxEnum:
		p.drop(s, keyword, "more than %d values", maxEnum)
	default:
		n.enum = kept
		if keyword == "const" {
			p.translate(s, "const", "an enum of one value")
		}
	}
}

// numbers keeps s's bounds and multipleOf.
func (p *projector) numbers(s *jsonschema.Schema, n *node) {
	n.min, n.max = s.Minimum, s.Maximum
	if s.ExclusiveMinimum != nil {
		if s.ExclusiveMinimum != s.Minimum {
			p.translate(s, "exclusiveMinimum", "a number: minimum with exclusiveMinimum true")
		}
		if n.min == nil || s.ExclusiveMinimum.Cmp(n.min) >= 0 {
			n.min, n.exclMin = s.ExclusiveMinimum, true
		}
	}
	if s.ExclusiveMaximum != nil {
		if s.ExclusiveMaximum != s.Maximum {
			p.translate(s, "exclusiveMaximum", "a number: maximum with exclusiveMaximum true")
		}
		if n.max == nil || s.ExclusiveMaximum.Cmp(n.max) <= 0 {
			n.max, n.exclMax = s.ExclusiveMaximum, true
		}
	}
	if m := s.MultipleOf; m != nil {
		if n.typ == "integer" && m.IsInt() && m.Num().IsInt64() {
			n.multipleOf = m
		} else {
			p.drop(s, "multipleOf", "the API server checks it in floating point, which may refuse a value the schema allows; only whole factors of integers are kept")
		}
	}
}

// strings keeps s's lengths, pattern and format.
func (p *projector) strings(s *jsonschema.Schema, n *node) {
	n.minLen, n.maxLen = s.MinLength, s.MaxLength
	if s.Pattern != nil {
		n.pattern = s.Pattern.String()
	}
	if s.Format != nil {
		switch {
		case s.DraftVersion >= 2019:
			// An annotation in these drafts: lockstep does not check it.
			n.descs = append(n.descs, "Format: "+s.Format.Name+".")
		case formats[s.Format.Name]:
			n.format = s.Format.Name
		default:
			n.descs = append(n.descs, "Format: "+s.Format.Name+".")
			p.drop(s, "format", "the API server checks %q differently from lockstep's schema library; lockstep's webhook checks it", s.Format.Name)
		}
	}
}

// array keeps s's items and bounds.
func (p *projector) array(s *jsonschema.Schema, n *node, depth int) {
	n.minItems, n.maxItems = s.MinItems, s.MaxItems
	switch items := s.Items.(type) {
	case *jsonschema.Schema:
		n.items = p.project(items, depth+1, false)
	case []*jsonschema.Schema:
		p.drop(s, "items", "a list of schemas, one per position (a tuple); the kind keeps the elements as free JSON")
		n.items = freeNode()
	}
	if len(s.PrefixItems) > 0 {
		p.drop(s, "prefixItems", "schemas per position (a tuple); the kind keeps the elements as free JSON")
		n.items = freeNode()
	} else if s.Items2020 != nil {
		n.items = p.project(s.Items2020, depth+1, false)
	}
	if n.items == nil && (s.Items != nil || s.Items2020 != nil) {
		// The false schema: no element at all.
		zero := 0
		n.maxItems, n.items = &zero, freeNode()
	}
	if s.AdditionalItems != nil {
		p.drop(s, "additionalItems", "it belongs to a tuple, which is not kept")
	}
	if s.Contains != nil {
		p.drop(s, "contains", "a CRD schema cannot say what some element must be")
	}
	if s.UniqueItems {
		p.drop(s, "uniqueItems", "the API server does not take it (its cost grows with the square of the length)")
	}
	if s.UnevaluatedItems != nil {
		p.drop(s, "unevaluatedItems", "not kept")
	}
}

// object keeps s's properties, required members and bounds, and what it
// says of other members.
func (p *projector) object(s *jsonschema.Schema, n *node, depth int) {
	n.minProps, n.maxProps = s.MinProperties, s.MaxProperties
	if len(s.Properties) > 0 {
		n.props = make(map[string]*node, len(s.Properties))
		for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
			if m := p.project(s.Properties[name], depth+1, false); m != nil {
				n.props[name] = m
			}
		}
	}
	n.required = slices.Clone(s.Required)
	switch ap := s.AdditionalProperties.(type) {
	case nil:
		n.rest = freeNode()
	case bool:
		if ap {
			n.rest = freeNode()
		}
	case *jsonschema.Schema:
		n.rest = p.project(ap, depth+1, false)
		if n.rest != nil && len(s.Properties) > 0 && !n.rest.free {
			p.drop(s, "additionalProperties", "a CRD schema cannot have a schema for other members beside properties; the kind keeps other members as free JSON")
			n.rest = freeNode()
		}
	}
	if len(s.PatternProperties) > 0 {
		p.drop(s, "patternProperties", "a CRD schema cannot match member names; the kind keeps such members as free JSON")
		n.rest = freeNode()
	}
	if s.PropertyNames != nil {
		p.drop(s, "propertyNames", "a CRD schema cannot check member names")
	}
	if len(s.Dependencies) > 0 {
		p.drop(s, "dependencies", "a CRD schema cannot make members or schemas depend on a member")
	}
	if len(s.DependentRequired) > 0 {
		p.drop(s, "dependentRequired", "a CRD schema cannot make a member required by another")
	}
	if len(s.DependentSchemas) > 0 {
		p.drop(s, "dependentSchemas", "a CRD schema cannot apply a schema when a member is present")
	}
	if s.UnevaluatedProperties != nil {
		p.drop(s, "unevaluatedProperties", "not kept: the kind keeps other members as free JSON")
		n.rest = freeNode()
	}
}

// finite reports whether a value is not a number, or a number that a
// float64 holds (perhaps rounded).
func finite(v any) bool {
	n, ok := v.(json.Number)
	if !ok {
		return true
	}
	r, ok := ratOf(n)
	if !ok {
		return false
	}
	f, _ := r.Float64()
	return !math.IsInf(f, 0)
}

// isWhole reports whether a JSON number has no fractional part.
func isWhole(n json.Number) bool {
	r, ok := ratOf(n)
	return ok && r.IsInt()
}

// parameterPath writes a parameter path below spec.parameters.
func parameterPath(at []string) string {
	for _, s := range at {
		if strings.HasPrefix(s, "/") {
			return s // a JSON pointer of the schema, for conflicts within one
		}
	}
	p := memberPath(at)
	if p == "" || strings.HasPrefix(p, "[") {
		return "spec.parameters" + p
	}
	return "spec.parameters." + p
}

// memberPath writes a path from spec.parameters: names joined with dots,
// "[*]" for an array's items, "*" for a map's values, a name that has a
// dot or a bracket (or none) in brackets.
func memberPath(at []string) string {
	var b strings.Builder
	for _, s := range at {
		switch {
		case s == "[*]":
			b.WriteString("[*]")
		case strings.ContainsAny(s, ".[]") || s == "":
			b.WriteString("[" + s + "]")
		default:
			if b.Len() > 0 {
				b.WriteString(".")
			}
			b.WriteString(s)
		}
	}
	return b.String()
}
