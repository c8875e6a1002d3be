package schema

import "github.com/santhosh-tekuri/jsonschema/v6"

// Compiled returns the plan's compiled create and update schemas, nil
// where the plan has none, for readers that project them into other
// schema languages (the CRD schemas of typed kinds). The schemas must not
// be changed.
func (s *PlanSchemas) Compiled() (create, update *jsonschema.Schema) {
	if s == nil {
		return nil, nil
	}
	if s.create != nil {
		create = s.create.schema
	}
	if s.update != nil {
		update = s.update.schema
	}
	return create, update
}

// CreateOnlyPaths returns the plan's create-only parameters, as
// CreateOnly does, each as the member names from spec.parameters down.
func (s *PlanSchemas) CreateOnlyPaths() [][]string {
	if s == nil {
		return nil
	}
	out := make([][]string, len(s.createOnly))
	for i, p := range s.createOnly {
		out[i] = p.tokens()
	}
	return out
}
