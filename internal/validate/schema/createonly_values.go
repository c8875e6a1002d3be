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

// FillCreateOnly returns held with each create-only parameter that from
// sets and held does not, taken from from: what a broker that replaces an
// instance's parameters with an update's (an update never carries the
// create-only ones) holds, as it was given at creation. What held sets
// stays as it is, and so do create-only parameters inside arrays. Empty
// held (the broker says nothing of its parameters) stays empty: nil.
func (s *PlanSchemas) FillCreateOnly(held, from *runtime.RawExtension) (json.RawMessage, error) {
	h, herr := decodeParams(held)
	if herr != nil {
		return nil, fmt.Errorf("the broker's parameters %w", herr)
	}
	if h.obj == nil {
		return nil, nil
	}
	f, ferr := decodeParams(from)
	if ferr != nil {
		return nil, fmt.Errorf("spec.parameters %w", ferr)
	}
	if s != nil {
		for _, at := range s.createOnly {
			v, ok := valueAt(f.obj, at)
			if _, has := valueAt(h.obj, at); ok && !has {
				setAt(h.obj, at, v)
			}
		}
	}
	return encodeObject(h.obj)
}

// setAt sets the member at p, making the objects on the way; false when
// p goes through an array or a value that is not an object.
func setAt(o object, p path, v any) bool {
	for i, s := range p {
		if s.index >= 0 {
			return false
		}
		if i == len(p)-1 {
			o[s.name] = v
			return true
		}
		next, ok := o[s.name]
		if !ok {
			next = object{}
			o[s.name] = next
		}
		if o, ok = next.(object); !ok {
			return false
		}
	}
	return false
}
