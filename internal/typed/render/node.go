package render

import (
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strconv"

	"github.com/lockstep-dev/lockstep/internal/jsonnum"
)

// node is what the CRD schema of one value says, before it is written as
// apiextensions JSONSchemaProps: the projection of one or more JSON Schemas.
// A node must accept every value the schemas it stands for accept (it may
// accept more). A nil *node accepts no value (the false schema).
type node struct {
	// free: every JSON value is accepted (no type; unknown fields kept).
	free     bool
	typ      string // object, array, string, number, integer, boolean
	nullable bool
	descs    []string
	// sensitive: the schema marks the value writeOnly or format password.
	sensitive bool
	enum      []any // nil: any value of the type

	// numbers
	min, max         *big.Rat
	exclMin, exclMax bool
	multipleOf       *big.Rat

	// strings
	minLen, maxLen *int
	pattern        string
	format         string

	// arrays: items nil means any element
	items              *node
	minItems, maxItems *int

	// objects
	props    map[string]*node
	required []string
	// reqBy are the plans whose create schema requires each member.
	reqBy              map[string][]string
	rest               *node // members not in props: nil none, else their schema
	minProps, maxProps *int
}

// freeNode accepts every JSON value.
func freeNode(descs ...string) *node { return &node{free: true, descs: descs} }

// member is the node of member name of object n: its property, or else
// what n says of the other members.
func (n *node) member(name string) *node {
	if p, ok := n.props[name]; ok {
		return p
	}
	return n.rest
}

// conflict is told where a union cannot keep what its parts say.
type conflict func(at []string, keyword, why string)

// join returns a node that accepts every value a or b accepts: the union
// of two plans' schemas, or of the branches of an anyOf. at is the
// parameter path, for the conflicts it reports.
func join(a, b *node, at []string, report conflict) *node {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case a.free || b.free:
		return &node{free: true, descs: mergeDescs(a.descs, b.descs), sensitive: a.sensitive || b.sensitive}
	}
	typ := a.typ
	if a.typ != b.typ {
		if !numeric(a.typ) || !numeric(b.typ) {
			report(at, "type", "one schema allows "+a.typ+" and another "+b.typ+" here; the kind keeps the value as free JSON")
			return &node{free: true, descs: mergeDescs(a.descs, b.descs), sensitive: a.sensitive || b.sensitive}
		}
		typ = "number"
	}
	n := &node{
		typ: typ, nullable: a.nullable || b.nullable,
		descs: mergeDescs(a.descs, b.descs), sensitive: a.sensitive || b.sensitive,
	}
	if a.enum != nil && b.enum != nil {
		n.enum = unionValues(a.enum, b.enum)
	}
	n.min, n.exclMin = looser(a.min, a.exclMin, b.min, b.exclMin, -1)
	n.max, n.exclMax = looser(a.max, a.exclMax, b.max, b.exclMax, 1)
	if a.multipleOf != nil && b.multipleOf != nil && a.multipleOf.Cmp(b.multipleOf) == 0 {
		n.multipleOf = a.multipleOf
	} else if a.multipleOf != nil || b.multipleOf != nil {
		report(at, "multipleOf", "the schemas differ in it")
	}
	n.minLen, n.maxLen = looserInt(a.minLen, b.minLen, -1), looserInt(a.maxLen, b.maxLen, 1)
	if a.pattern == b.pattern {
		n.pattern = a.pattern
	} else {
		report(at, "pattern", "the schemas differ in it")
	}
	if a.format == b.format {
		n.format = a.format
	}
	if typ == "array" {
		if a.items == nil || b.items == nil {
			n.items = nil
		} else {
			n.items = join(a.items, b.items, append(at, "[*]"), report)
		}
	}
	n.minItems, n.maxItems = looserInt(a.minItems, b.minItems, -1), looserInt(a.maxItems, b.maxItems, 1)
	if typ == "object" {
		n.props, n.rest = members(a, b, at, report, join)
		for _, r := range a.required {
			if slices.Contains(b.required, r) {
				n.required = append(n.required, r)
			}
		}
		n.reqBy = unionReqBy(a.reqBy, b.reqBy)
	}
	n.minProps, n.maxProps = looserInt(a.minProps, b.minProps, -1), looserInt(a.maxProps, b.maxProps, 1)
	reportLooser(at, report, a, b, n)
	return n
}

// meet returns a node that accepts every value both a and b accept (it
// may accept more): a schema with its allOf, $ref or anyOf beside it.
func meet(a, b *node, at []string, report conflict) *node {
	switch {
	case a == nil || b == nil:
		return nil
	case b.free:
		c := *a
		c.descs, c.sensitive = mergeDescs(a.descs, b.descs), a.sensitive || b.sensitive
		return &c
	case a.free:
		c := *b
		c.descs, c.sensitive = mergeDescs(a.descs, b.descs), a.sensitive || b.sensitive
		return &c
	}
	if a.typ != b.typ {
		if !numeric(a.typ) || !numeric(b.typ) {
			// No value has both types (null aside): keeping a accepts
			// more than the two together, which is allowed.
			return a
		}
		if b.typ == "integer" {
			a, b = b, a
		}
	}
	n := *a
	n.nullable = a.nullable && b.nullable
	n.descs, n.sensitive = mergeDescs(a.descs, b.descs), a.sensitive || b.sensitive
	switch {
	case a.enum == nil:
		n.enum = b.enum
	case b.enum != nil:
		if both := commonValues(a.enum, b.enum); len(both) > 0 {
			n.enum = both
		}
	}
	n.min, n.exclMin = tighter(a.min, a.exclMin, b.min, b.exclMin, 1)
	n.max, n.exclMax = tighter(a.max, a.exclMax, b.max, b.exclMax, -1)
	if n.multipleOf == nil {
		n.multipleOf = b.multipleOf
	}
	n.minLen, n.maxLen = tighterInt(a.minLen, b.minLen, 1), tighterInt(a.maxLen, b.maxLen, -1)
	switch {
	case n.pattern == "":
		n.pattern = b.pattern
	case b.pattern != "" && b.pattern != n.pattern:
		report(at, "pattern", "a value must match two patterns here and a CRD schema holds one; the kind checks the first")
	}
	if n.format == "" {
		n.format = b.format
	}
	if n.typ == "array" {
		switch {
		case a.items == nil:
			n.items = b.items
		case b.items != nil:
			n.items = meet(a.items, b.items, append(at, "[*]"), report)
		}
	}
	n.minItems, n.maxItems = tighterInt(a.minItems, b.minItems, 1), tighterInt(a.maxItems, b.maxItems, -1)
	if n.typ == "object" {
		n.props, n.rest = members(a, b, at, report, meet)
		n.required = nil
		for _, r := range append(slices.Clone(a.required), b.required...) {
			if !slices.Contains(n.required, r) {
				n.required = append(n.required, r)
			}
		}
		n.reqBy = unionReqBy(a.reqBy, b.reqBy)
	}
	n.minProps, n.maxProps = tighterInt(a.minProps, b.minProps, 1), tighterInt(a.maxProps, b.maxProps, -1)
	return &n
}

// members combines the members of objects a and b with combine (join or
// meet): each property, and what they say of other members.
func members(a, b *node, at []string, report conflict, combine func(a, b *node, at []string, report conflict) *node) (map[string]*node, *node) {
	var props map[string]*node
	for _, name := range memberNames(a, b) {
		if props == nil {
			props = map[string]*node{}
		}
		if m := combine(a.member(name), b.member(name), append(at, name), report); m != nil {
			props[name] = m
		}
	}
	return props, combine(a.rest, b.rest, append(at, "*"), report)
}

// unionReqBy is the plans of a and b that require each member, each
// plan once.
func unionReqBy(a, b map[string][]string) map[string][]string {
	if len(a) == 0 && len(b) == 0 {
		return nil
	}
	out := make(map[string][]string, len(a)+len(b))
	for _, m := range []map[string][]string{a, b} {
		for name, plans := range m {
			for _, p := range plans {
				if !slices.Contains(out[name], p) {
					out[name] = append(out[name], p)
				}
			}
		}
	}
	return out
}

// reportLooser reports each bound and enum of a and b that their union n
// keeps looser than one of them: there the CRD accepts more than that
// schema, which a CRD cannot say for some plans (or branches) only.
func reportLooser(at []string, report conflict, a, b, n *node) {
	rat := func(r *big.Rat) string {
		if r == nil {
			return "none"
		}
		return r.RatString()
	}
	integer := func(v *int) string {
		if v == nil {
			return "none"
		}
		return strconv.Itoa(*v)
	}
	for _, c := range []struct {
		keyword  string
		a, b, to string
	}{
		{"minimum", rat(a.min), rat(b.min), rat(n.min)},
		{"maximum", rat(a.max), rat(b.max), rat(n.max)},
		{"minLength", integer(a.minLen), integer(b.minLen), integer(n.minLen)},
		{"maxLength", integer(a.maxLen), integer(b.maxLen), integer(n.maxLen)},
		{"minItems", integer(a.minItems), integer(b.minItems), integer(n.minItems)},
		{"maxItems", integer(a.maxItems), integer(b.maxItems), integer(n.maxItems)},
		{"minProperties", integer(a.minProps), integer(b.minProps), integer(n.minProps)},
		{"maxProperties", integer(a.maxProps), integer(b.maxProps), integer(n.maxProps)},
	} {
		if c.a != c.b {
			report(at, c.keyword, fmt.Sprintf("the schemas differ in it (%s, %s): the kind keeps the looser, %s, and lockstep's webhook checks each plan's own", c.a, c.b, c.to))
		}
	}
	if (a.enum == nil) != (b.enum == nil) || len(n.enum) != len(a.enum) || len(n.enum) != len(b.enum) {
		if a.enum != nil || b.enum != nil {
			report(at, "enum", "the schemas allow different values: the kind keeps every value one of them allows (or any, where one has no enum), and lockstep's webhook checks each plan's own")
		}
	}
}

func numeric(typ string) bool { return typ == "number" || typ == "integer" }

// memberNames returns the property names of a and b, sorted.
func memberNames(a, b *node) []string {
	var names []string
	for name := range a.props {
		names = append(names, name)
	}
	for name := range b.props {
		names = append(names, name)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// mergeDescs returns the descriptions of a and then those of b it lacks.
func mergeDescs(a, b []string) []string {
	out := slices.Clone(a)
	for _, d := range b {
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// unionValues returns the values of a and those of b not in a, compared
// as JSON values.
func unionValues(a, b []any) []any {
	out := slices.Clone(a)
	for _, v := range b {
		if !containsValue(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// commonValues returns the values of a that are also in b.
func commonValues(a, b []any) []any {
	var out []any
	for _, v := range a {
		if containsValue(b, v) {
			out = append(out, v)
		}
	}
	return out
}

func containsValue(values []any, v any) bool {
	for _, w := range values {
		if jsonnum.ValuesEqual(v, w) {
			return true
		}
	}
	return false
}

// looser returns the looser of two bounds: the lower for a minimum (sign
// -1), the higher for a maximum (sign 1); none when either has none.
func looser(a *big.Rat, aExcl bool, b *big.Rat, bExcl bool, sign int) (*big.Rat, bool) {
	if a == nil || b == nil {
		return nil, false
	}
	switch c := a.Cmp(b) * sign; {
	case c > 0:
		return a, aExcl
	case c < 0:
		return b, bExcl
	}
	return a, aExcl && bExcl
}

// tighter returns the tighter of two bounds: the higher for a minimum
// (sign 1), the lower for a maximum (sign -1).
func tighter(a *big.Rat, aExcl bool, b *big.Rat, bExcl bool, sign int) (*big.Rat, bool) {
	switch {
	case a == nil:
		return b, bExcl
	case b == nil:
		return a, aExcl
	}
	switch c := a.Cmp(b) * sign; {
	case c > 0:
		return a, aExcl
	case c < 0:
		return b, bExcl
	}
	return a, aExcl || bExcl
}

func looserInt(a, b *int, sign int) *int {
	if a == nil || b == nil {
		return nil
	}
	if (*a >= *b) == (sign > 0) {
		return a
	}
	return b
}

func tighterInt(a, b *int, sign int) *int {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case (*a >= *b) == (sign > 0):
		return a
	}
	return b
}

// jsonText writes a value as compact JSON for a description.
func jsonText(v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		return "?"
	}
	return string(raw)
}
