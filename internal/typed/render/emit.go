package render

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// sensitiveNote ends the description of a sensitive parameter.
const sensitiveNote = "Sensitive: lockstep refuses it here; put it in a Secret and name the Secret in spec.parametersFrom."

// maxDescription bounds one description, in bytes.
const maxDescription = 4096

// emitter is what emit needs beside a node: where to report what the CRD
// schema does not hold, and how many plans the schema is the union of.
type emitter struct {
	report conflict
	plans  int
}

// emit writes n as a structural CRD schema. at is the parameter path,
// for what it reports as dropped.
//
// A member every plan's create schema requires, and no update may remove
// (each plan's update schema requires it too, or leaves it create-only),
// is required: `kubectl explain` shows it so. A member only some plans
// require, or that is sensitive (it comes from a Secret, not from
// spec.parameters), is not: its description says which plans require it
// at creation, and the report lists it.
func emit(n *node, at []string, e *emitter) apiextensionsv1.JSONSchemaProps {
	report := e.report
	if n == nil {
		// Nothing is allowed here; the CRD cannot say so and accepts any
		// value, which lockstep's webhook refuses.
		return apiextensionsv1.JSONSchemaProps{XPreserveUnknownFields: ptr(true)}
	}
	out := apiextensionsv1.JSONSchemaProps{Description: description(n)}
	if n.free {
		out.XPreserveUnknownFields = ptr(true)
		return out
	}
	out.Type = n.typ
	out.Nullable = n.nullable
	for _, v := range n.enum {
		raw, err := json.Marshal(v)
		if err == nil {
			out.Enum = append(out.Enum, apiextensionsv1.JSON{Raw: raw})
		}
	}
	min, exclMin, max, exclMax := n.min, n.exclMin, n.max, n.exclMax
	if n.typ == "integer" {
		// The API server wants whole bounds on integers: the integers
		// above 0.5 are those from 1 on.
		min, exclMin = wholeBound(min, exclMin, -1)
		max, exclMax = wholeBound(max, exclMax, 1)
		// and bounds within int64, which is what it reads integers as:
		// a bound beyond bounds nothing it stores.
		if min != nil && !min.Num().IsInt64() {
			min = nil
		}
		if max != nil && !max.Num().IsInt64() {
			max = nil
		}
	}
	if min != nil {
		if f, ok := bound(min, -1); ok {
			out.Minimum, out.ExclusiveMinimum = &f, exclMin
		} else {
			report(at, "minimum", "out of the range of a CRD schema's numbers")
		}
	}
	if max != nil {
		if f, ok := bound(max, 1); ok {
			out.Maximum, out.ExclusiveMaximum = &f, exclMax
		} else {
			report(at, "maximum", "out of the range of a CRD schema's numbers")
		}
	}
	if n.multipleOf != nil && n.typ == "integer" {
		if f, exact := n.multipleOf.Float64(); exact && f > 0 && f < 1<<53 {
			out.MultipleOf = &f
		}
	}
	out.MinLength, out.MaxLength = int64p(n.minLen), int64p(n.maxLen)
	out.Pattern, out.Format = n.pattern, n.format
	switch n.typ {
	case "array":
		items := freeNode()
		if n.items != nil {
			items = n.items
		}
		s := emit(items, append(at, "[*]"), e)
		out.Items = &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &s}
		out.MinItems, out.MaxItems = int64p(n.minItems), int64p(n.maxItems)
	case "object":
		out.MinProperties, out.MaxProperties = int64p(n.minProps), int64p(n.maxProps)
		for _, name := range slices.Sorted(maps.Keys(n.props)) {
			if out.Properties == nil {
				out.Properties = map[string]apiextensionsv1.JSONSchemaProps{}
			}
			out.Properties[name] = emit(n.props[name], append(at, name), e)
		}
		for _, r := range n.required {
			if m := n.props[r]; m != nil && m.sensitive {
				continue
			}
			if !slices.Contains(out.Required, r) {
				out.Required = append(out.Required, r)
			}
		}
		slices.Sort(out.Required)
		e.notRequired(n, at, &out)
		switch {
		case n.rest == nil:
			// Other members are not allowed: the API server prunes them.
		case n.rest.free || len(n.props) > 0:
			out.XPreserveUnknownFields = ptr(true)
		default:
			s := emit(n.rest, append(at, "*"), e)
			out.AdditionalProperties = &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &s}
		}
	}
	return out
}

// notRequired says, in the description of each member of object n that a
// plan's create schema requires and out does not, which plans require
// it, and reports it with why the CRD does not require it.
func (e *emitter) notRequired(n *node, at []string, out *apiextensionsv1.JSONSchemaProps) {
	for _, name := range slices.Sorted(maps.Keys(n.reqBy)) {
		if slices.Contains(out.Required, name) {
			continue
		}
		plans := slices.Sorted(slices.Values(n.reqBy[name]))
		var why, says string
		switch m := n.props[name]; {
		case m != nil && m.sensitive:
			why = "it is sensitive: it comes from a Secret (spec.parametersFrom), not from spec.parameters, so the kind does not require it there"
			says = "Required at creation, from a Secret."
		case len(plans) < e.plans:
			why = fmt.Sprintf("only plan(s) %s require it at creation, and a CRD cannot require a member for some plans; its description says which, and lockstep's webhook checks it", strings.Join(plans, ", "))
			says = fmt.Sprintf("Required at creation by plan(s) %s.", strings.Join(plans, ", "))
		default:
			why = "every plan requires it at creation, but an update may remove it (a plan's update schema neither requires it nor keeps it create-only), and a CRD cannot require a member at creation only; its description says so, and lockstep's webhook checks it"
			says = "Required at creation."
		}
		e.report(append(slices.Clone(at), name), "required", why)
		if m, ok := out.Properties[name]; ok {
			if m.Description == "" {
				m.Description = says
			} else {
				m.Description += "\n\n" + says
			}
			out.Properties[name] = m
		}
	}
}

// description joins what the schemas say of a value.
func description(n *node) string {
	descs := n.descs
	if n.sensitive {
		descs = append(slices.Clone(descs), sensitiveNote)
	}
	d := strings.Join(descs, "\n\n")
	if len(d) > maxDescription {
		cut := maxDescription
		for cut > 0 && !isRuneStart(d[cut]) {
			cut--
		}
		d = d[:cut] + "…"
	}
	return d
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// bound converts a bound to a float64 that is never stricter: rounded
// down for a minimum (sign -1), up for a maximum (sign 1). ok is false
// beyond the range of float64.
func bound(r *big.Rat, sign int) (float64, bool) {
	f, exact := r.Float64()
	if math.IsInf(f, 0) {
		return 0, false
	}
	if !exact {
		if c := new(big.Rat).SetFloat64(f).Cmp(r); c != 0 && (c > 0) == (sign < 0) {
			f = math.Nextafter(f, math.Inf(sign))
		}
	}
	return f, !math.IsInf(f, 0)
}

// wholeBound turns a bound on integers into a whole one with the same
// meaning: a minimum (sign -1) rounds up, a maximum (sign 1) down.
func wholeBound(r *big.Rat, excl bool, sign int) (*big.Rat, bool) {
	if r == nil || r.IsInt() {
		return r, excl
	}
	q := new(big.Int).Quo(r.Num(), r.Denom()) // towards zero
	if sign < 0 && r.Sign() > 0 {
		q.Add(q, big.NewInt(1))
	}
	if sign > 0 && r.Sign() < 0 {
		q.Sub(q, big.NewInt(1))
	}
	return new(big.Rat).SetInt(q), false
}

// ratOf reads a JSON number exactly, refusing numbers too long or with an
// exponent too large to compute with at a bounded cost.
func ratOf(n json.Number) (*big.Rat, bool) {
	s := string(n)
	if len(s) > 100 {
		return nil, false
	}
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		exp, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+"))
		if err != nil || exp > 400 || exp < -400 {
			return nil, false
		}
	}
	return new(big.Rat).SetString(s)
}

func int64p(v *int) *int64 {
	if v == nil {
		return nil
	}
	i := int64(*v)
	return &i
}

func ptr[T any](v T) *T { return &v }
