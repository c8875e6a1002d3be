package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Limits on parameters that are checked against a schema. Real parameters
// are far smaller; the limits keep the cost of a check bounded (the schema
// library works with exact rationals, so a number like 1e999999999 would
// otherwise cost memory and time without end).
const (
	maxNesting      = 1000  // levels of objects and arrays
	maxNumberLength = 1000  // characters of one JSON number
	maxExponent     = 10000 // magnitude of a number's decimal exponent
)

// object is a decoded parameters object. Numbers are json.Number, so no
// precision is lost; a nil object is the empty one.
type object = map[string]any

// paramsError says why spec.parameters cannot be checked at all.
type paramsError struct {
	value  any
	detail string
}

func (e *paramsError) Error() string { return e.detail }

func (e *paramsError) fieldError(p *field.Path) *field.Error {
	return field.Invalid(p, e.value, e.detail)
}

// params is a decoded spec.parameters.
type params struct {
	obj object // nil: no parameters, the empty object
	// beyondLimits is set when obj may exceed the limits above;
	// checkLimits says where.
	beyondLimits bool
}

// decodeParams decodes spec.parameters. Nil, empty and JSON null are no
// parameters: the empty object.
func decodeParams(ext *runtime.RawExtension) (params, *paramsError) {
	raw, err := rawParams(ext)
	if err != nil {
		return params{}, &paramsError{value: textValue(fmt.Sprintf("%T", ext.Object)), detail: "cannot be encoded as JSON: " + err.Error()}
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return params{}, nil
	}
	v, beyondLimits, err := decodeJSON(raw)
	if err != nil {
		return params{}, &paramsError{value: textValue(raw), detail: "is not valid JSON: " + err.Error()}
	}
	obj, ok := v.(object)
	if !ok {
		return params{}, &paramsError{value: shownValue(v), detail: fmt.Sprintf(
			"must be a JSON object that maps parameter names to values, not %s", jsonTypeWithArticle(v))}
	}
	return params{obj: obj, beyondLimits: beyondLimits}, nil
}

// rawParams returns the JSON of spec.parameters.
func rawParams(ext *runtime.RawExtension) ([]byte, error) {
	switch {
	case ext == nil:
		return nil, nil
	case ext.Raw != nil:
		return ext.Raw, nil
	case ext.Object != nil:
		return json.Marshal(ext.Object)
	}
	return nil, nil
}

// jsonTypeWithArticle names the JSON type of a decoded value for messages.
func jsonTypeWithArticle(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return strconv.FormatBool(v)
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case []any:
		return "an array"
	case object:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// checkLimits reports values that exceed the limits above: each number that
// is too long or too far out, and nesting that is too deep (once). base is
// the field path of spec.parameters.
func checkLimits(doc object, base *field.Path) field.ErrorList {
	l := limitChecker{base: base}
	l.walk(doc, 0)
	return l.errs
}

type limitChecker struct {
	base    *field.Path
	at      path
	errs    field.ErrorList
	tooDeep bool
}

// walk checks v, which depth objects and arrays enclose.
func (l *limitChecker) walk(v any, depth int) {
	if l.tooDeep {
		return
	}
	switch v := v.(type) {
	case object:
		if l.deeperThanAllowed(v, depth) {
			return
		}
		for k, e := range v {
			l.at = append(l.at, member(k))
			l.walk(e, depth+1)
			l.at = l.at[:len(l.at)-1]
		}
	case []any:
		if l.deeperThanAllowed(v, depth) {
			return
		}
		for i, e := range v {
			l.at = append(l.at, element(i))
			l.walk(e, depth+1)
			l.at = l.at[:len(l.at)-1]
		}
	case json.Number:
		if !numberInRange(string(v)) {
			l.errs = append(l.errs, field.Invalid(fieldPath(l.base, l.at), shownValue(v), fmt.Sprintf(
				"number at %s is out of range: parameter numbers may have at most %d characters and a decimal exponent between -%d and %d",
				pointer(l.at.tokens()), maxNumberLength, maxExponent, maxExponent)))
		}
	}
}

// deeperThanAllowed reports (once) an object or array that is nested
// deeper than maxNesting: depth others enclose it.
func (l *limitChecker) deeperThanAllowed(v any, depth int) bool {
	if depth+1 <= maxNesting {
		return false
	}
	l.tooDeep = true
	l.errs = append(l.errs, field.Invalid(fieldPath(l.base, l.at), shownValue(v), fmt.Sprintf(
		"parameters nest objects and arrays more than %d levels deep at %s; lockstep checks no deeper",
		maxNesting, pointer(l.at.tokens()))))
	return true
}

// numberInRange reports whether a JSON number is short enough and its
// exponent small enough for exact arithmetic at a bounded cost.
func numberInRange(s string) bool {
	if len(s) > maxNumberLength {
		return false
	}
	i := strings.IndexAny(s, "eE")
	if i < 0 {
		return true
	}
	exp, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+"))
	return err == nil && exp >= -maxExponent && exp <= maxExponent
}

// ShapeError is the error of parameters that are not a JSON object (nor
// null, nor absent), at path, as every check of them reports it; nil for
// parameters that are one. It checks no schema: for a check that runs
// whether or not the plan is known.
func ShapeError(ext *runtime.RawExtension, path *field.Path) *field.Error {
	if _, perr := decodeParams(ext); perr != nil {
		return perr.fieldError(path)
	}
	return nil
}
