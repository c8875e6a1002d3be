package render

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// DeprecatedPrefix starts the description of a parameter that no plan has
// any more and that objects of the kind still set.
const DeprecatedPrefix = "Deprecated: no plan of the service has it any more; kept while objects set it. "

// Loses reports whether a property that was (the schema of
// spec.parameters the CRD has) has, at any depth (in arrays' items and
// maps' values too), is not in now (the one rendered from the catalog),
// or whether now prunes members was keeps as unknown fields. Where it
// does not, Keep has nothing to keep, whatever the objects hold.
func Loses(was, now *apiextensionsv1.JSONSchemaProps) bool {
	if was == nil || now == nil || free(now) {
		return false
	}
	for name, p := range was.Properties {
		q, ok := now.Properties[name]
		switch {
		case ok:
			if Loses(&p, &q) {
				return true
			}
		case rest(now) != nil && !preserves(now):
			if Loses(&p, rest(now)) {
				return true
			}
		default:
			return true
		}
	}
	if r := rest(was); r != nil && !preserves(now) {
		if q := rest(now); q == nil || Loses(r, q) {
			return true
		}
	}
	if was.Items != nil && was.Items.Schema != nil {
		if now.Items == nil || now.Items.Schema == nil || Loses(was.Items.Schema, now.Items.Schema) {
			return true
		}
	}
	return false
}

// Keep returns now, the schema of spec.parameters rendered from the
// catalog, with each property that was (the schema the CRD has) has, that
// now does not, and that one of values (the objects' spec.parameters)
// sets: as was has it (the whole of it, where a parent of what objects
// set is gone), its description starting with DeprecatedPrefix. Where now
// does not keep unknown fields, the API server would otherwise prune it
// from the objects; where it does, kubectl explain still shows what the
// objects hold. A member was keeps as an unknown field is kept as any
// value where now would prune it. Below a value now leaves free (any
// value) nothing is pruned, and nothing kept. Keep returns the paths of
// what it kept below spec.parameters ("backup.window", "nodes[*].zone",
// "labels.*.owner"), sorted, and an error when what it returns goes
// beyond the limits of a rendering (nesting, properties, size); now is not
// changed.
//
// A change of type keeping cannot mend: where an object sets an object
// (members) and now gives the value another type (a string for an
// object, a string for an array of objects), the API server would prune
// its members. Keep then returns a *RetypedError naming where. A change
// of type that prunes nothing (no object sets the value, or a scalar
// for a scalar: integer to string) is no error: the API server keeps the
// values, and may refuse a write that leaves them of the old type.
func Keep(was, now *apiextensionsv1.JSONSchemaProps, values []any) (*apiextensionsv1.JSONSchemaProps, []string, error) {
	out := now.DeepCopy()
	k := keeper{kept: map[string]bool{}, retyped: map[string]bool{}}
	for _, v := range values {
		k.walk(v, was, out, nil)
	}
	kept := slices.Sorted(maps.Keys(k.kept))
	if len(k.retyped) > 0 {
		return out, kept, &RetypedError{Paths: slices.Sorted(maps.Keys(k.retyped))}
	}
	if len(kept) == 0 {
		return out, nil, nil
	}
	return out, kept, withinLimits(out)
}

// RetypedError says that the schema rendered from the catalog gives
// values objects set another type, and that the API server would prune
// their members: Paths, below spec.parameters, sorted.
type RetypedError struct {
	Paths []string
}

func (e *RetypedError) Error() string {
	return fmt.Sprintf("the type of %s changes, and the API server would drop the members objects set there", strings.Join(e.Paths, ", "))
}

// keeper walks the objects' values with the schemas.
type keeper struct {
	kept    map[string]bool
	retyped map[string]bool
}

// walk keeps in now (the schema of v, at path at) what v sets that was
// has and now does not, and notes where now, of another type, would prune
// the members v sets.
func (k keeper) walk(v any, was, now *apiextensionsv1.JSONSchemaProps, at []string) {
	switch v := v.(type) {
	case map[string]any:
		if now.Type != "object" {
			if len(v) > 0 && !preserves(now) {
				k.retyped[memberPath(at)] = true // not an object any more: its members would go
			}
			return
		}
		for _, name := range slices.Sorted(maps.Keys(v)) {
			below := append(at[:len(at):len(at)], name)
			if p, ok := now.Properties[name]; ok {
				k.walk(v[name], member(was, name), &p, below)
				now.Properties[name] = p
				continue
			}
			if r := rest(now); r != nil && !preserves(now) {
				k.walk(v[name], member(was, name), r, append(at[:len(at):len(at)], "*"))
				continue
			}
			old, named := (*apiextensionsv1.JSONSchemaProps)(nil), false
			if was != nil {
				if p, ok := was.Properties[name]; ok {
					old, named = &p, true
				} else if !preserves(now) {
					old = rest(was) // a member was keeps as an unknown field, or one of its map
				}
			}
			if old == nil {
				continue // the API server pruned it already, or keeps it
			}
			kept := *old.DeepCopy()
			if !named {
				kept.Description = ""
			}
			kept.Description = DeprecatedPrefix + strings.TrimPrefix(kept.Description, DeprecatedPrefix)
			if now.Properties == nil {
				now.Properties = map[string]apiextensionsv1.JSONSchemaProps{}
			}
			now.Properties[name] = kept
			k.kept[memberPath(below)] = true
		}
	case []any:
		each := &apiextensionsv1.JSONSchemaProps{} // not an array any more: the API server prunes the members of its objects
		switch {
		case now.Items != nil && now.Items.Schema != nil:
			each = now.Items.Schema
		case preserves(now):
			return
		}
		var items *apiextensionsv1.JSONSchemaProps
		if was != nil && was.Items != nil {
			items = was.Items.Schema
		}
		for _, e := range v {
			k.walk(e, items, each, append(at[:len(at):len(at)], "[*]"))
		}
	}
}

// member is the schema s gives member name of an object; nil when the
// API server prunes the member.
func member(s *apiextensionsv1.JSONSchemaProps, name string) *apiextensionsv1.JSONSchemaProps {
	if s == nil {
		return nil
	}
	if p, ok := s.Properties[name]; ok {
		return &p
	}
	return rest(s)
}

// rest is the schema s gives the members of an object it does not name:
// its additionalProperties, any value where it keeps unknown fields; nil
// when the API server prunes them.
func rest(s *apiextensionsv1.JSONSchemaProps) *apiextensionsv1.JSONSchemaProps {
	switch {
	case s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil:
		return s.AdditionalProperties.Schema
	case preserves(s):
		return &apiextensionsv1.JSONSchemaProps{XPreserveUnknownFields: ptr(true)}
	}
	return nil
}

// free reports whether s takes any value (it has no type and keeps
// unknown fields).
func free(s *apiextensionsv1.JSONSchemaProps) bool {
	return s.Type == "" && preserves(s)
}

// preserves reports whether s keeps the unknown fields of an object.
func preserves(s *apiextensionsv1.JSONSchemaProps) bool {
	return s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields
}

// withinLimits checks the schema of spec.parameters against the limits of
// a rendering.
func withinLimits(params *apiextensionsv1.JSONSchemaProps) error {
	if d := depthOf(params); d > maxDepth+1 {
		return fmt.Errorf("values would nest %d levels deep, more than the %d a kind takes", d, maxDepth+1)
	}
	if n := propertiesOf(params); n > maxProperties {
		return fmt.Errorf("the schema would have %d properties, more than the %d a kind takes", n, maxProperties)
	}
	if raw, err := json.Marshal(params); err != nil || len(raw) > maxSchemaBytes {
		return fmt.Errorf("the schema would take more than %d KiB", maxSchemaBytes>>10)
	}
	return nil
}

// depthOf is how deep values nest in s, s itself at 0.
func depthOf(s *apiextensionsv1.JSONSchemaProps) int {
	d := 0
	for _, p := range s.Properties {
		d = max(d, 1+depthOf(&p))
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		d = max(d, 1+depthOf(s.AdditionalProperties.Schema))
	}
	if s.Items != nil && s.Items.Schema != nil {
		d = max(d, 1+depthOf(s.Items.Schema))
	}
	return d
}

// propertiesOf counts the properties of s, at every depth.
func propertiesOf(s *apiextensionsv1.JSONSchemaProps) int {
	n := len(s.Properties)
	for _, p := range s.Properties {
		n += propertiesOf(&p)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		n += propertiesOf(s.AdditionalProperties.Schema)
	}
	if s.Items != nil && s.Items.Schema != nil {
		n += propertiesOf(s.Items.Schema)
	}
	return n
}
