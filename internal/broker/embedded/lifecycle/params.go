package lifecycle

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
)

// objectOrEmpty checks that raw is a JSON object (absent or null is an
// empty one) and returns it canonically encoded.
func objectOrEmpty(field string, raw json.RawMessage) (json.RawMessage, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return json.RawMessage(`{}`), nil
	}
	m, err := decodeObject(raw)
	if err != nil {
		return nil, badRequest("%s must be a JSON object: %v", field, err)
	}
	return canonical(m)
}

// optionalObject is objectOrEmpty that keeps "absent" as nil.
func optionalObject(field string, raw json.RawMessage) (json.RawMessage, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil, nil
	}
	return objectOrEmpty(field, raw)
}

func decodeObject(raw json.RawMessage) (map[string]json.RawMessage, error) {
	m := map[string]json.RawMessage{}
	if len(raw) == 0 || string(raw) == "null" {
		return m, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	if m == nil {
		m = map[string]json.RawMessage{}
	}
	return m, nil
}

// canonical encodes any JSON value with sorted keys and no spaces, so that
// equal values compare equal as bytes.
func canonical(v any) (json.RawMessage, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var generic any
	if err := dec.Decode(&generic); err != nil {
		return nil, err
	}
	return json.Marshal(generic)
}

// sameJSON compares two JSON documents by value; absent equals {}.
func sameJSON(a, b json.RawMessage) bool {
	ca, errA := objectOrEmptyValue(a)
	cb, errB := objectOrEmptyValue(b)
	return errA == nil && errB == nil && bytes.Equal(ca, cb)
}

func objectOrEmptyValue(raw json.RawMessage) (json.RawMessage, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return json.RawMessage(`{}`), nil
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return canonical(v)
}

// applyCreateOnly checks an update's parameters against the create-only
// properties of the plan: a create-only property sent with a value other
// than the instance's is refused; one not sent keeps the instance's value
// (the update replaces the other parameters). It returns the parameters the
// instance will have, and the parameters to validate against the update
// schema (without the create-only ones, which that schema does not know).
func applyCreateOnly(current, given json.RawMessage, createOnly []string) (next, toValidate json.RawMessage, err error) {
	cur, err := decodeObject(current)
	if err != nil {
		return nil, nil, internal("the stored parameters of the instance are not a JSON object: %v", err)
	}
	giv, err := decodeObject(given)
	if err != nil {
		return nil, nil, badRequest("parameters must be a JSON object: %v", err)
	}
	validate := map[string]json.RawMessage{}
	for k, v := range giv {
		validate[k] = v
	}
	var violations []string
	for _, k := range createOnly {
		old, had := cur[k]
		v, sent := giv[k]
		delete(validate, k)
		switch {
		case sent && (!had || !sameJSON(old, v)):
			was := "unset"
			if had {
				was = string(old)
			}
			violations = append(violations, fmt.Sprintf("%q is create-only: it was %s at creation and cannot change to %s", k, was, string(v)))
		case !sent && had:
			giv[k] = old
		}
	}
	if len(violations) > 0 {
		sort.Strings(violations)
		return nil, nil, badRequest("parameters change create-only properties: %s (deprovision and provision again to change them)", joinSemi(violations))
	}
	if next, err = canonical(giv); err != nil {
		return nil, nil, internal("encode parameters: %v", err)
	}
	if toValidate, err = canonical(validate); err != nil {
		return nil, nil, internal("encode parameters: %v", err)
	}
	return next, toValidate, nil
}

func joinSemi(s []string) string {
	var b bytes.Buffer
	for i, x := range s {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(x)
	}
	return b.String()
}
