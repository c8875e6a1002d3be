package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateProvision checks the parameters of a new ServiceInstance against
// the plan's create schema. params nil means no parameters: {}. path is the
// field path of spec.parameters. Without a create schema only the shape is
// checked: parameters must be a JSON object.
func (s *PlanSchemas) ValidateProvision(params *runtime.RawExtension, path *field.Path) field.ErrorList {
	return s.createSchema().check(params, path)
}

// ValidateBind checks the parameters of a new ServiceBinding against the
// plan's bind schema, like ValidateProvision.
func (s *PlanSchemas) ValidateBind(params *runtime.RawExtension, path *field.Path) field.ErrorList {
	return s.bindSchema().check(params, path)
}

// ValidateUpdate checks the parameters of an updated ServiceInstance: no
// create-only parameter may be set, removed or changed, and what
// UpdateParameters makes of new must satisfy the plan's update schema.
// Without an update schema nothing is create-only and nothing is checked
// but the shape: parameters must be a JSON object.
func (s *PlanSchemas) ValidateUpdate(old, new *runtime.RawExtension, path *field.Path) field.ErrorList {
	newParams, perr := decodeParams(new)
	if perr != nil {
		return field.ErrorList{perr.fieldError(path)}
	}
	if s == nil {
		return nil
	}
	var errs field.ErrorList
	if len(s.createOnly) > 0 && !sameRaw(old, new) {
		oldParams, perr := decodeParams(old)
		if perr != nil {
			errs = append(errs, field.InternalError(path, fmt.Errorf(
				"the create-only parameters (%v) cannot be checked because the stored parameters %s; delete and recreate the instance",
				s.display, perr.detail)))
		} else {
			errs = append(errs, s.checkCreateOnly(oldParams.obj, newParams.obj, path)...)
		}
	}
	if s.update != nil {
		stripped, _ := s.strip.strip(newParams.obj)
		errs = append(errs, s.update.validate(params{obj: stripped, beyondLimits: newParams.beyondLimits}, path)...)
	}
	return errs
}

// UpdateParameters returns what lockstep sends to the broker on update:
// new without the create-only parameters (the update schema may forbid
// them), as compact JSON with object keys sorted. No parameters are {}.
// The error says why new is not a JSON object.
func (s *PlanSchemas) UpdateParameters(new *runtime.RawExtension) (json.RawMessage, error) {
	p, perr := decodeParams(new)
	if perr != nil {
		return nil, fmt.Errorf("spec.parameters %w", perr)
	}
	doc := p.obj
	if s != nil {
		doc, _ = s.strip.strip(doc)
	}
	return encodeObject(doc)
}

// sameRaw reports whether old and new hold the same JSON bytes, so that
// no parameter can have changed.
func sameRaw(old, new *runtime.RawExtension) bool {
	return old != nil && new != nil && old.Object == nil && new.Object == nil && old.Raw != nil && bytes.Equal(old.Raw, new.Raw)
}

// createSchema and bindSchema return the schemas; nil when the plan has
// none.
func (s *PlanSchemas) createSchema() *compiled {
	if s == nil {
		return nil
	}
	return s.create
}

func (s *PlanSchemas) bindSchema() *compiled {
	if s == nil {
		return nil
	}
	return s.bind
}

// check decodes params and validates them against c; a nil c checks only
// that params are a JSON object.
func (c *compiled) check(raw *runtime.RawExtension, path *field.Path) field.ErrorList {
	p, perr := decodeParams(raw)
	if perr != nil {
		return field.ErrorList{perr.fieldError(path)}
	}
	if c == nil {
		return nil
	}
	return c.validate(p, path)
}

// validate checks a decoded parameters object against the schema and
// reports every violation.
func (c *compiled) validate(p params, path *field.Path) field.ErrorList {
	if p.beyondLimits {
		if errs := checkLimits(p.obj, path); len(errs) > 0 {
			return sortErrors(errs)
		}
	}
	err := c.run(p.obj)
	if err == nil {
		return nil
	}
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		return field.ErrorList{field.InternalError(path, fmt.Errorf(
			"could not check the parameters against the plan's %s schema: %w", c.which, err))}
	}
	return report(c.which, verr, p.obj, path)
}

// run validates: quickValid first, the library when that is not sure. A
// panic of the library comes back as an error.
func (c *compiled) run(doc object) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the JSON Schema library failed: %v", r)
		}
	}()
	if doc == nil {
		doc = object{}
	}
	if p := c.patterns; p != nil {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.spent = 0
	}
	if quickValid(c.schema, doc, 0) {
		return nil
	}
	return c.schema.Validate(doc)
}

// encodeObject writes an object as compact JSON with sorted keys, without
// HTML escaping.
func encodeObject(o object) (json.RawMessage, error) {
	if o == nil {
		return json.RawMessage("{}"), nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(o); err != nil {
		return nil, fmt.Errorf("could not encode the parameters as JSON: %w", err)
	}
	return json.RawMessage(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))), nil
}
