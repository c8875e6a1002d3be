package schema

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
)

// CreateOnlyValues returns the create-only parameters that params sets,
// as a JSON object from each one's path (as CreateOnly names it) to its
// value, with sorted keys: what must never change after creation. It lets
// a caller keep a digest of these values when it cannot keep the values
// themselves (parameters from Secrets). No create-only parameters set:
// {}.
func (s *PlanSchemas) CreateOnlyValues(params *runtime.RawExtension) (json.RawMessage, error) {
	p, perr := decodeParams(params)
	if perr != nil {
		return nil, fmt.Errorf("spec.parameters %w", perr)
	}
	out := object{}
	if s != nil {
		for i, at := range s.createOnly {
			if v, ok := valueAt(p.obj, at); ok {
				out[s.display[i]] = v
			}
		}
	}
	return encodeObject(out)
}
