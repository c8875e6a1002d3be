package schema

import (
	"fmt"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/lockstep-dev/lockstep/internal/jsonnum"
)

// maxDeriveDepth bounds how deep create-only parameters are derived, and
// maxDeriveLevels how many objects the derivation looks at in all (a schema
// whose definitions refer to each other without a cycle could otherwise
// describe exponentially many paths).
const (
	maxDeriveDepth  = 32
	maxDeriveLevels = 10000
)

// deriveCreateOnly returns the paths of the properties that are in the
// create schema but not in the update schema (see the package doc for the
// exact rule), sorted as CreateOnly shows them.
func deriveCreateOnly(create, update *jsonschema.Schema) []path {
	d := deriver{onPath: map[string]bool{}}
	d.level([]*jsonschema.Schema{create}, []*jsonschema.Schema{update}, nil)
	slices.SortFunc(d.out, func(a, b path) int { return strings.Compare(a.String(), b.String()) })
	return d.out
}

type deriver struct {
	onPath map[string]bool // levels being derived, to stop at cycles
	levels int             // levels looked at so far
	out    []path
}

// level derives the create-only members of the object at "at", which the
// create schemas and the update schemas describe.
func (d *deriver) level(create, update []*jsonschema.Schema, at path) {
	if len(at) >= maxDeriveDepth || d.levels >= maxDeriveLevels {
		return
	}
	d.levels++
	c, u := expand(create), expand(update)
	if !declaresMembers(u) {
		return
	}
	key := levelKey(c) + "|" + levelKey(u)
	if d.onPath[key] {
		return
	}
	d.onPath[key] = true
	defer delete(d.onPath, key)
	for _, name := range propertyNames(c) {
		p := append(slices.Clip(at), member(name))
		uc := updateChildren(u, name)
		if len(uc) == 0 {
			d.out = append(d.out, p)
			continue
		}
		d.level(createChildren(c, name), uc, p)
	}
}

// expand returns the schemas and every subschema that applies to the same
// value and may describe its members: through "$ref" (and its recursive and
// dynamic forms), "allOf", "anyOf", "oneOf", "then", "else",
// "dependentSchemas" and schema-valued "dependencies".
func expand(roots []*jsonschema.Schema) []*jsonschema.Schema {
	seen := map[*jsonschema.Schema]bool{}
	var out []*jsonschema.Schema
	var visit func(s *jsonschema.Schema)
	visit = func(s *jsonschema.Schema) {
		if s == nil || seen[s] {
			return
		}
		seen[s] = true
		out = append(out, s)
		visit(s.Ref)
		visit(s.RecursiveRef)
		if s.DynamicRef != nil {
			visit(s.DynamicRef.Ref)
		}
		for _, list := range [][]*jsonschema.Schema{s.AllOf, s.AnyOf, s.OneOf} {
			for _, sub := range list {
				visit(sub)
			}
		}
		visit(s.Then)
		visit(s.Else)
		for _, sub := range s.DependentSchemas {
			visit(sub)
		}
		for _, dep := range s.Dependencies {
			if sub, ok := dep.(*jsonschema.Schema); ok {
				visit(sub)
			}
		}
	}
	for _, s := range roots {
		visit(s)
	}
	return out
}

// declaresMembers reports whether the schemas say which members an object
// may have: they name some, or they close the object.
func declaresMembers(schemas []*jsonschema.Schema) bool {
	for _, s := range schemas {
		if isFalse(s) || len(s.Properties) > 0 || len(s.PatternProperties) > 0 || isFalse(s.UnevaluatedProperties) {
			return true
		}
		switch ap := s.AdditionalProperties.(type) {
		case bool:
			if !ap {
				return true
			}
		case *jsonschema.Schema:
			if isFalse(ap) {
				return true
			}
		}
	}
	return false
}

// isFalse reports whether s is the false schema, which nothing satisfies.
func isFalse(s *jsonschema.Schema) bool {
	return s != nil && s.Bool != nil && !*s.Bool
}

// levelKey identifies a set of schemas by their locations.
func levelKey(schemas []*jsonschema.Schema) string {
	locs := make([]string, len(schemas))
	for i, s := range schemas {
		locs[i] = s.Location
	}
	slices.Sort(locs)
	return strings.Join(locs, "\x00")
}

// propertyNames returns the names the schemas list under "properties".
func propertyNames(schemas []*jsonschema.Schema) []string {
	var names []string
	for _, s := range schemas {
		for name := range s.Properties {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// createChildren returns the create schemas of member name.
func createChildren(schemas []*jsonschema.Schema, name string) []*jsonschema.Schema {
	var out []*jsonschema.Schema
	for _, s := range schemas {
		if sub, ok := s.Properties[name]; ok {
			out = append(out, sub)
		}
	}
	return out
}

// updateChildren returns the update schemas of member name, from
// "properties" and matching "patternProperties", leaving out the false
// schema: a member only the false schema describes is not in the update
// schema. None means the update schema does not have the member.
func updateChildren(schemas []*jsonschema.Schema, name string) []*jsonschema.Schema {
	var out []*jsonschema.Schema
	for _, s := range schemas {
		if sub, ok := s.Properties[name]; ok && !isFalse(sub) {
			out = append(out, sub)
		}
		for re, sub := range s.PatternProperties {
			if !isFalse(sub) && re.MatchString(name) {
				out = append(out, sub)
			}
		}
	}
	return out
}

// valueAt returns the value at p (member names only) in o.
func valueAt(o object, p path) (any, bool) {
	var v any = o
	for _, s := range p {
		obj, ok := v.(object)
		if !ok {
			return nil, false
		}
		if v, ok = obj[s.name]; !ok {
			return nil, false
		}
	}
	return v, true
}

// CreateOnlyReason says why a parameter is create-only, in lockstep's
// messages and in those of the typed kinds' CRD rules alike.
const CreateOnlyReason = "in the plan's create schema, not in its update schema"

// createOnlyRule starts every create-only message.
const createOnlyRule = "create-only parameter (" + CreateOnlyReason + ")"

// checkCreateOnly reports each create-only parameter that old and new do
// not agree on.
func (s *PlanSchemas) checkCreateOnly(old, new object, base *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, p := range s.createOnly {
		ov, wasSet := valueAt(old, p)
		nv, isSet := valueAt(new, p)
		fp := fieldPath(base, p)
		switch {
		case !wasSet && isSet:
			errs = append(errs, field.Invalid(fp, shownValue(nv), createOnlyRule+
				": it cannot be set after creation (it was not set); delete and recreate the instance to set it"))
		case wasSet && !isSet:
			errs = append(errs, field.Forbidden(fp, fmt.Sprintf(createOnlyRule+
				": it cannot be removed after creation (was %s); delete and recreate the instance to remove it", compactJSON(ov))))
		case wasSet && !jsonnum.ValuesEqual(ov, nv):
			errs = append(errs, field.Invalid(fp, shownValue(nv), fmt.Sprintf(createOnlyRule+
				": it cannot be changed after creation (was %s); delete and recreate the instance to change it", compactJSON(ov))))
		}
	}
	return errs
}

// stripNode is the create-only paths as a tree of member names.
type stripNode struct {
	leaf     bool // the member itself is create-only
	children map[string]*stripNode
}

// newStripTree builds the tree of paths; nil when there are none.
func newStripTree(paths []path) *stripNode {
	if len(paths) == 0 {
		return nil
	}
	root := &stripNode{}
	for _, p := range paths {
		n := root
		for _, s := range p {
			if n.children == nil {
				n.children = map[string]*stripNode{}
			}
			next, ok := n.children[s.name]
			if !ok {
				next = &stripNode{}
				n.children[s.name] = next
			}
			n = next
		}
		n.leaf = true
	}
	return root
}

// strip returns o without the create-only members. o is never changed:
// objects on the way to a removed member are copied, everything else is
// shared. changed is false when o holds no create-only member.
func (n *stripNode) strip(o object) (out object, changed bool) {
	if n == nil {
		return o, false
	}
	out = o
	for name, child := range n.children {
		v, ok := o[name]
		if !ok {
			continue
		}
		var replacement any
		remove := child.leaf
		if !remove {
			sub, isObject := v.(object)
			if !isObject {
				continue
			}
			stripped, subChanged := child.strip(sub)
			if !subChanged {
				continue
			}
			replacement = stripped
		}
		if !changed {
			out, changed = make(object, len(o)), true
			for k, v := range o {
				out[k] = v
			}
		}
		if remove {
			delete(out, name)
		} else {
			out[name] = replacement
		}
	}
	return out, changed
}
