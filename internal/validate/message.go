package validate

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// maxShown is how many bytes of a value an error message shows.
const maxShown = 120

// notSet is how messages show an absent value.
const notSet = "not set"

// violation builds the error for a rule broken by an update. old or new is
// the invalid Value when that side is absent.
func violation(path *field.Path, kind Kind, e *eqInfo, old, new reflect.Value) *field.Error {
	if kind == ReadOnly {
		return field.Forbidden(path, fmt.Sprintf(
			"read-only field: set by lockstep, not by users (was %s, now %s); leave it as it was",
			shown(e, old), shown(e, new)))
	}
	switch {
	case !old.IsValid():
		return field.Invalid(path, badValue(e, new),
			"create-only field: it cannot be set after creation (it was not set when the object was created); delete and recreate the object to set it")
	case !new.IsValid():
		return field.Forbidden(path, fmt.Sprintf(
			"create-only field: it cannot be removed after creation (was %s); put the old value back, or delete and recreate the object",
			shown(e, old)))
	}
	return field.Invalid(path, badValue(e, new), fmt.Sprintf(
		"create-only field: it cannot be changed after creation (was %s); delete and recreate the object to change it",
		shown(e, old)))
}

// readOnlyOnCreate builds the error for a read-only field set by a user in
// a new object (or a new element of a list or map).
func readOnlyOnCreate(path *field.Path, e *eqInfo, new reflect.Value) *field.Error {
	return field.Forbidden(path, fmt.Sprintf(
		"read-only field: set by lockstep, not by users (now %s); leave it out", shown(e, new)))
}

// shown renders a value for a message: compact JSON cut to maxShown bytes,
// or "not set" for an absent value.
func shown(e *eqInfo, v reflect.Value) string {
	if !v.IsValid() {
		return notSet
	}
	text, _ := render(e, v)
	return truncate(text)
}

// badValue is the value an Invalid error carries, as kubectl prints it:
// strings, booleans and numbers as themselves (long strings cut), anything
// else as compact JSON through shownValue.
func badValue(e *eqInfo, v reflect.Value) any {
	for e.class == eqPtr && v.IsValid() && !v.IsNil() {
		e, v = e.elem, v.Elem()
	}
	if v.IsValid() {
		switch e.class {
		case eqString:
			return truncate(v.String())
		case eqBool:
			return v.Bool()
		case eqInt:
			return v.Int()
		case eqUint:
			return v.Uint()
		case eqFloat:
			return v.Float()
		}
	}
	text, _ := render(e, v)
	return shownValue(truncate(text))
}

// shownValue is a value as an error shows it: compact JSON, perhaps cut.
// It is for display only. field.Error prints a value through json.Marshal
// when that works, which would quote this text or escape <, > and & in it,
// so marshalling fails on purpose and field.Error prints String() instead.
type shownValue string

var errShownValue = errors.New("validate: the value is a display text, not JSON")

func (s shownValue) String() string { return string(s) }

// MarshalJSON fails: see shownValue.
func (s shownValue) MarshalJSON() ([]byte, error) { return nil, errShownValue }

// render writes a value as compact JSON (second result true), or with fmt
// when it has no JSON form.
func render(e *eqInfo, v reflect.Value) (string, bool) {
	if !v.IsValid() {
		return "null", true
	}
	for e.class == eqPtr && !v.IsNil() {
		e, v = e.elem, v.Elem()
	}
	if e.class == eqRaw && !rawObjectSet(e, v) {
		raw := rawBytes(e, v)
		if nullJSON(raw) {
			return "null", true
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, raw); err != nil {
			return strconv.Quote(string(raw)), false
		}
		return buf.String(), true
	}
	if !v.CanInterface() {
		return fmt.Sprintf("%v", v), false
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v.Interface()); err != nil {
		return fmt.Sprintf("%v", v.Interface()), false
	}
	return string(bytes.TrimRight(buf.Bytes(), "\n")), true
}

// truncate cuts s to maxShown bytes on a character boundary, marking the
// cut with "...".
func truncate(s string) string {
	if len(s) <= maxShown {
		return s
	}
	i := maxShown - len("...")
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "..."
}

// keyText writes a map key the way JSON does: strings as they are, text
// marshalers through MarshalText, numbers in decimal.
func keyText(k reflect.Value) string {
	if k.Kind() == reflect.String {
		return k.String()
	}
	if k.CanInterface() {
		if tm, ok := k.Interface().(encoding.TextMarshaler); ok {
			if b, err := tm.MarshalText(); err == nil {
				return string(b)
			}
		}
	}
	switch k.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(k.Int(), 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return strconv.FormatUint(k.Uint(), 10)
	case reflect.Float32, reflect.Float64:
		return strconv.FormatFloat(k.Float(), 'g', -1, 64)
	case reflect.Bool:
		return strconv.FormatBool(k.Bool())
	}
	return fmt.Sprintf("%v", k)
}
