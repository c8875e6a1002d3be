package celrules

import (
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiservercel "k8s.io/apiserver/pkg/cel"

	"github.com/lockstep-dev/lockstep/internal/validate"
)

// Rule is one generated validation rule of a kind.
type Rule struct {
	// Property is the top-level property of the object schema the rule
	// goes on ("spec").
	Property string
	// Field is the way from Property to the field whose schema carries the
	// rule ("serviceName"); empty when Property's schema carries it.
	Field []string
	// Path is the field the rule guards, as the engine names it
	// ("spec.serviceName").
	Path string
	// Validation is the rule as the CRD schema carries it.
	Validation apiextensionsv1.ValidationRule
}

// Left is a tagged field that gets no rule, and why: the engine alone
// enforces its policy.
type Left struct {
	Path string
	Kind validate.Kind
	Why  string
}

// For derives the rules of a kind from the field policy of its Go type t
// and the CRD schema of the kind (the openAPIV3Schema of one version).
// kind names the objects in messages. It fails when the policy does not
// compile or names a field the schema does not have.
func For(t reflect.Type, kind string, schema *apiextensionsv1.JSONSchemaProps) ([]Rule, []Left, error) {
	p, err := validate.Compile(t)
	if err != nil {
		return nil, nil, err
	}
	var rules []Rule
	var left []Left
	for _, r := range p.Rules() {
		if r.Kind != validate.CreateOnly {
			why := "lockstep writes it itself, and a rule cannot tell lockstep from a user"
			if strings.HasPrefix(r.Path, "status.") {
				why = "status has its own subresource: the API server drops it on create and keeps it on updates of the object"
			}
			left = append(left, Left{Path: r.Path, Kind: r.Kind, Why: why})
			continue
		}
		rs, why, err := createOnly(t, r.Path, kind, schema)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", kind, err)
		}
		if why != "" {
			left = append(left, Left{Path: r.Path, Kind: r.Kind, Why: why})
			continue
		}
		rules = append(rules, rs...)
	}
	return rules, left, nil
}

// identifier matches the field names a rule can use, escaped where needed.
var identifier = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// createOnly builds the rules of the create-only field at path, or says
// why it gets none.
//
// A rule is cheapest on the field itself: there, self is the field's value,
// while a rule on an object reads each field it names through the object's
// schema (on kube-apiserver several times the cost of the comparison). But
// a rule on a field runs only when the old and the new object both have it.
// So a field directly below the top-level property that its schema
// requires (always there) gets its rule on itself: `self == oldSelf`, or,
// for a struct, the comparison of its fields. An optional scalar there gets
// `self == oldSelf` on itself, for a change, and a rule on the property for
// a value set or removed after the create, which tests only that the
// field's presence is the same in the old and the new object before it
// compares anything. Every other field gets one rule on the property.
func createOnly(t reflect.Type, path, kind string, root *apiextensionsv1.JSONSchemaProps) ([]Rule, string, error) {
	if strings.Contains(path, "[") {
		return nil, "it is inside a list element or map value, which the engine matches by index or key", nil
	}
	segs := strings.Split(path, ".")
	top, ok := root.Properties[segs[0]]
	if !ok {
		return nil, "", fmt.Errorf("the schema has no property %q for the field policy of %s", segs[0], path)
	}
	if len(segs) == 1 {
		return nil, "it is a top-level property, which a rule cannot guard", nil
	}
	if !requiredIn(root, segs[0]) {
		return nil, fmt.Sprintf("%s is optional, and a rule on it does not run when it is absent", segs[0]), nil
	}
	s := &top
	for _, name := range segs[1:] {
		if !identifier.MatchString(name) || strings.Contains(name, "__") {
			return nil, fmt.Sprintf("the name %q is not one a rule can name", name), nil
		}
		next, ok := s.Properties[name]
		if !ok {
			return nil, "", fmt.Errorf("the schema has no property %q on the way to %s", name, path)
		}
		s = &next
	}
	if opaque(s) {
		return nil, "CEL cannot see its contents (raw JSON kept as it is)", nil
	}
	goType, ok := validate.FieldType(t, path)
	if !ok {
		return nil, "", fmt.Errorf("the Go type has no field %s", path)
	}
	f := field{segs: segs[1:]}
	rule, ok := equal(f, s, goType)
	if !ok {
		return nil, "its schema has a part without a type a rule can compare", nil
	}
	var msg string
	switch s.Type {
	case "string", "integer", "number", "boolean":
		zero := scalar(s.Type)
		msg = messages(kind,
			fmt.Sprintf("%s == %s", f.value("oldSelf", zero), zero),
			fmt.Sprintf("%s == %s", f.value("self", zero), zero))
	case "array":
		msg = messages(kind, f.size("oldSelf")+" == 0", f.size("self")+" == 0")
	default:
		if s.AdditionalProperties != nil {
			msg = messages(kind, f.size("oldSelf")+" == 0", f.size("self")+" == 0")
		} else {
			msg = messages(kind, "!"+f.has("oldSelf"), "!"+f.has("self"))
		}
	}
	onProperty := Rule{
		Property: segs[0],
		Path:     path,
		Validation: apiextensionsv1.ValidationRule{
			Rule:              rule,
			Message:           fmt.Sprintf("create-only field: it cannot be set, changed or removed after the %s is created; delete and recreate the %s to change it", kind, kind),
			MessageExpression: msg,
			FieldPath:         "." + strings.Join(segs[1:], "."),
			Reason:            ptr(apiextensionsv1.FieldValueForbidden),
		},
	}
	if len(f.segs) != 1 || goType.Kind() == reflect.Pointer {
		return []Rule{onProperty}, "", nil
	}
	required := requiredIn(&top, segs[1])
	onField := Rule{
		Property: segs[0],
		Field:    f.segs,
		Path:     path,
		Validation: apiextensionsv1.ValidationRule{
			Rule:    "self == oldSelf",
			Message: fmt.Sprintf("create-only field: it cannot be changed after the %s is created; delete and recreate the %s to change it", kind, kind),
			Reason:  ptr(apiextensionsv1.FieldValueForbidden),
		},
	}
	switch {
	case isScalar(s.Type) && required:
		return []Rule{onField}, "", nil
	case isScalar(s.Type):
		// Present in both, the rule on the field compares the values;
		// absent from both, they are equal.
		onProperty.Validation.Rule = fmt.Sprintf("%s == %s || %s", f.has("self"), f.has("oldSelf"), rule)
		return []Rule{onField, onProperty}, "", nil
	case required && s.Type == "object" && s.AdditionalProperties == nil:
		// Always present: compared on itself, field by field.
		onField.Validation.Rule, _ = equal(field{}, s, goType)
		return []Rule{onField}, "", nil
	case required:
		// A list or a map, always present: compared whole.
		return []Rule{onField}, "", nil
	}
	return []Rule{onProperty}, "", nil
}

// isScalar reports whether a schema type is a string, a number or a
// boolean.
func isScalar(typ string) bool {
	switch typ {
	case "string", "integer", "number", "boolean":
		return true
	}
	return false
}

// equal builds the expression that holds when the field f, of schema s
// and Go type gt, is equal in self and oldSelf, the way the engine
// compares: an absent value equals its zero value, except that a Go
// pointer is present whenever it is set; lists and maps are compared whole
// (absent equals empty); objects field by field, so that an absent struct
// equals one whose fields are all zero.
func equal(f field, s *apiextensionsv1.JSONSchemaProps, gt reflect.Type) (string, bool) {
	presence := ""
	if gt != nil && gt.Kind() == reflect.Pointer {
		presence = fmt.Sprintf("(%s) == (%s) && ", f.has("self"), f.has("oldSelf"))
	}
	switch s.Type {
	case "string", "integer", "number", "boolean":
		zero := scalar(s.Type)
		return fmt.Sprintf("%s%s == %s", presence, f.value("self", zero), f.value("oldSelf", zero)), true
	case "array":
		return sized(f), true
	case "object":
		if s.AdditionalProperties != nil {
			return sized(f), true
		}
		if len(s.Properties) == 0 {
			return "", false
		}
		names := slices.Sorted(maps.Keys(s.Properties))
		parts := make([]string, 0, len(names))
		for _, name := range names {
			if !identifier.MatchString(name) || strings.Contains(name, "__") {
				return "", false
			}
			p := s.Properties[name]
			var sub reflect.Type
			if gt != nil {
				sub, _ = validate.FieldType(gt, name)
			}
			part, ok := equal(f.child(name), &p, sub)
			if !ok {
				return "", false
			}
			parts = append(parts, "("+part+")")
		}
		return presence + strings.Join(parts, " && "), true
	}
	return "", false
}

// sized compares a list or map field: the same size, and equal when not
// empty.
func sized(f field) string {
	return fmt.Sprintf("%s == %s && (%s == 0 || %s == %s)",
		f.size("self"), f.size("oldSelf"), f.size("self"), f.at("self"), f.at("oldSelf"))
}

// field is the way from a top-level property to a field.
type field struct{ segs []string }

func (f field) child(name string) field {
	return field{segs: append(slices.Clone(f.segs), name)}
}

// value is the field below x, or zero when it is absent.
func (f field) value(x, zero string) string {
	return fmt.Sprintf("(%s ? %s : %s)", f.has(x), f.at(x), zero)
}

// size is the size of the list or map field below x, 0 when it is absent.
func (f field) size(x string) string {
	return fmt.Sprintf("(%s ? size(%s) : 0)", f.has(x), f.at(x))
}

// at is the field below x.
func (f field) at(x string) string { return x + "." + f.join(len(f.segs)) }

// join names the first n steps of the way, escaped for CEL as the API
// server escapes property names; a name it cannot escape is written as it
// is (callers check the names first).
func (f field) join(n int) string {
	names := make([]string, n)
	for i, name := range f.segs[:n] {
		if escaped, ok := apiservercel.Escape(name); ok {
			name = escaped
		}
		names[i] = name
	}
	return strings.Join(names, ".")
}

// has tests that the field and every object on the way to it are present
// below x.
func (f field) has(x string) string {
	tests := make([]string, len(f.segs))
	for i := range f.segs {
		tests[i] = fmt.Sprintf("has(%s.%s)", x, f.join(i+1))
	}
	return strings.Join(tests, " && ")
}

// scalar returns the zero value of a scalar schema type in CEL.
func scalar(typ string) string {
	switch typ {
	case "string":
		return "''"
	case "integer":
		return "0"
	case "number":
		return "0.0"
	default:
		return "false"
	}
}

// messages builds the message expression of a create-only field's rule
// of a kind: set (when wasUnset holds), removed (when isUnset holds) or
// changed, and what to do. It shows no values: building a message from
// values of unbounded size costs more than the API server's budget
// allows. kind must not hold a quote.
func messages(kind, wasUnset, isUnset string) string {
	const what = "create-only field"
	set := fmt.Sprintf("'%s: it cannot be set after the %s is created (it was not set then); delete and recreate the %s to set it'", what, kind, kind)
	removed := fmt.Sprintf("'%s: it cannot be removed after the %s is created; put the old value back, or delete and recreate the %s'", what, kind, kind)
	changed := fmt.Sprintf("'%s: it cannot be changed after the %s is created; delete and recreate the %s to change it'", what, kind, kind)
	return fmt.Sprintf("%s ? %s : %s ? %s : %s", wasUnset, set, isUnset, removed, changed)
}

// opaque reports whether CEL cannot see all of a value of schema s: raw
// JSON (no type, or unknown fields kept) or int-or-string anywhere in it.
func opaque(s *apiextensionsv1.JSONSchemaProps) bool {
	if s.Type == "" || s.XIntOrString || (s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields) {
		return true
	}
	if s.Items != nil && s.Items.Schema != nil && opaque(s.Items.Schema) {
		return true
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil && opaque(s.AdditionalProperties.Schema) {
		return true
	}
	for _, p := range s.Properties {
		if opaque(&p) {
			return true
		}
	}
	return false
}

func requiredIn(s *apiextensionsv1.JSONSchemaProps, name string) bool {
	for _, r := range s.Required {
		if r == name {
			return true
		}
	}
	return false
}

func ptr[T any](v T) *T { return &v }

// Opaque reports whether CEL cannot see all of a value of schema s: raw
// JSON (no type, or unknown fields kept) or int-or-string anywhere in it.
// A rule that compares such a value is not generated.
func Opaque(s *apiextensionsv1.JSONSchemaProps) bool { return opaque(s) }
