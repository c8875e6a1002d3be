package render

import (
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// UnrequiredNote ends the description of a member the rendered schema
// requires and that the CRD does not, because objects lack it.
const UnrequiredNote = "Required at creation; objects of the kind made before it was required lack it, so the kind marks it required once none does."

// Unrequire returns params, the schema of spec.parameters rendered from
// the catalog, without the required members that one of values (the
// objects' spec.parameters; nil for an object without) lacks, at any
// depth, each with UnrequiredNote in its description: an object made
// before its plans required the member could otherwise not be updated at
// all (the API server would refuse the update for the missing member, and
// lockstep would refuse to set it afterwards where it is create-only). It
// returns the paths of those members below spec.parameters, sorted;
// params is not changed.
func Unrequire(params *apiextensionsv1.JSONSchemaProps, values []any) (*apiextensionsv1.JSONSchemaProps, []string) {
	out := params.DeepCopy()
	found := map[string]bool{}
	for _, v := range values {
		if v == nil {
			v = map[string]any{}
		}
		unrequire(out, v, nil, found)
	}
	paths := make([]string, 0, len(found))
	for p := range found {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	return out, paths
}

// unrequire removes from s, the schema of value v at path at, what v
// lacks of s's required members, and goes on below.
func unrequire(s *apiextensionsv1.JSONSchemaProps, v any, at []string, found map[string]bool) {
	switch v := v.(type) {
	case map[string]any:
		kept := s.Required[:0:0]
		for _, r := range s.Required {
			if _, ok := v[r]; ok {
				kept = append(kept, r)
				continue
			}
			path := memberPath(append(slices.Clone(at), r))
			noted := found[path]
			found[path] = true
			if m, ok := s.Properties[r]; ok && !noted {
				if m.Description != "" {
					m.Description += "\n\n"
				}
				m.Description += UnrequiredNote
				s.Properties[r] = m
			}
		}
		if len(kept) == 0 {
			kept = nil
		}
		s.Required = kept
		for name, member := range v {
			if p, ok := s.Properties[name]; ok {
				unrequire(&p, member, append(at, name), found)
				s.Properties[name] = p
			} else if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
				unrequire(s.AdditionalProperties.Schema, member, append(at, "*"), found)
			}
		}
	case []any:
		if s.Items == nil || s.Items.Schema == nil {
			return
		}
		for _, item := range v {
			unrequire(s.Items.Schema, item, append(at, "[*]"), found)
		}
	}
}
