package render

import (
	"maps"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/lockstep-dev/lockstep/internal/validate/schema"
)

// Sensitive returns the parameters the plan's create or update schema
// marks sensitive ("writeOnly": true, or "format": "password"), sorted, as
// paths below spec.parameters: member names joined by '.', "[*]" for any
// element of an array and "*" for any member an object's
// additionalProperties describes ("admin.password", "users[*].password").
// Subschemas that apply to the same value ($ref, allOf, anyOf, oneOf,
// then, else) are followed, each cycle once, at most maxDepth levels deep
// and through at most maxVisits subschemas.
func Sensitive(ps *schema.PlanSchemas) []string {
	create, update := ps.Compiled()
	w := sensitiveWalker{seen: map[sensitiveKey]bool{}}
	w.walk(create, nil)
	w.walk(update, nil)
	slices.Sort(w.out)
	return slices.Compact(w.out)
}

type sensitiveKey struct {
	s    *jsonschema.Schema
	path string
}

type sensitiveWalker struct {
	seen   map[sensitiveKey]bool
	visits int
	out    []string
}

func (w *sensitiveWalker) walk(s *jsonschema.Schema, at []string) {
	if s == nil || len(at) > maxDepth || w.visits >= maxVisits {
		return
	}
	key := sensitiveKey{s, parameterPath(at)}
	if w.seen[key] {
		return
	}
	w.seen[key] = true
	w.visits++
	if len(at) > 0 && (s.WriteOnly || (s.Format != nil && s.Format.Name == "password")) {
		w.out = append(w.out, strings.TrimPrefix(strings.TrimPrefix(key.path, "spec.parameters"), "."))
	}
	for _, sub := range sameValue(s) {
		w.walk(sub, at)
	}
	for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
		w.walk(s.Properties[name], append(slices.Clip(at), name))
	}
	if ap, ok := s.AdditionalProperties.(*jsonschema.Schema); ok {
		w.walk(ap, append(slices.Clip(at), "*"))
	}
	switch items := s.Items.(type) {
	case *jsonschema.Schema:
		w.walk(items, append(slices.Clip(at), "[*]"))
	case []*jsonschema.Schema:
		for _, sub := range items {
			w.walk(sub, append(slices.Clip(at), "[*]"))
		}
	}
	w.walk(s.Items2020, append(slices.Clip(at), "[*]"))
	for _, sub := range s.PrefixItems {
		w.walk(sub, append(slices.Clip(at), "[*]"))
	}
}

// sameValue returns the subschemas that apply to the same value as s.
func sameValue(s *jsonschema.Schema) []*jsonschema.Schema {
	out := []*jsonschema.Schema{s.Ref, s.RecursiveRef, dynamicRef(s), s.Then, s.Else}
	out = append(out, s.AllOf...)
	out = append(out, s.AnyOf...)
	return append(out, s.OneOf...)
}
