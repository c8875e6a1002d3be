package schema

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// maxViolations is how many violations a refusal lists: parameters of a
// few kilobytes can break a schema tens of thousands of times, and the
// refusal goes back through kube-apiserver to a person.
const maxViolations = 100

// report turns the library's tree of validation errors into one field
// error per violation, sorted: the first maxViolations, and how many
// more there are.
func report(w which, verr *jsonschema.ValidationError, doc object, base *field.Path) field.ErrorList {
	r := reporter{schema: fmt.Sprintf("the plan's %s schema", w), doc: doc, base: base}
	for _, l := range leaves(verr) {
		r.leaf(l)
	}
	errs := sortErrors(r.errs)
	if more := len(errs) - maxViolations; more > 0 {
		errs = append(errs[:maxViolations:maxViolations], field.Invalid(base, field.OmitValueType{}, fmt.Sprintf(
			"and %d more violations of %s, not listed (a refusal lists the first %d): correct these first", more, r.schema, maxViolations)))
	}
	return errs
}

type reporter struct {
	schema string // "the plan's create schema"
	doc    object
	base   *field.Path
	errs   field.ErrorList
}

// leaves flattens an error tree to the violations themselves. A failed
// "anyOf" or "oneOf" is one violation, not the failures of its
// alternatives (any one alternative would do), and so are "contains",
// "propertyNames" and "contentSchema", whose causes only explain them.
func leaves(e *jsonschema.ValidationError) []*jsonschema.ValidationError {
	var out []*jsonschema.ValidationError
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if e == nil {
			return
		}
		if len(e.Causes) == 0 || isAtomic(e.ErrorKind) {
			out = append(out, e)
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(e)
	return out
}

// isAtomic reports whether an error with causes is one violation.
func isAtomic(k jsonschema.ErrorKind) bool {
	switch k.(type) {
	case *kind.AnyOf, *kind.OneOf, *kind.Contains, *kind.MinContains, *kind.PropertyNames, *kind.ContentSchema:
		return true
	}
	return false
}

// leaf adds the field errors of one violation.
func (r *reporter) leaf(e *jsonschema.ValidationError) {
	at, v, _ := locate(r.doc, e.InstanceLocation)
	fp := fieldPath(r.base, at)
	ptr := pointer(e.InstanceLocation)
	// memberError reports something about member name of the object at e.
	memberError := func(name string, mk func(fp *field.Path, ptr string) *field.Error) {
		loc := append(slices.Clip(e.InstanceLocation), name)
		r.errs = append(r.errs, mk(fieldPath(fp, path{member(name)}), pointer(loc)))
	}
	switch k := e.ErrorKind.(type) {
	case *kind.Required:
		for _, name := range k.Missing {
			memberError(name, func(fp *field.Path, ptr string) *field.Error {
				return field.Required(fp, fmt.Sprintf("required by %s at %s", r.schema, ptr)).WithOrigin("required")
			})
		}
	case *kind.Dependency:
		for _, name := range k.Missing {
			memberError(name, func(fp *field.Path, ptr string) *field.Error {
				return field.Required(fp, fmt.Sprintf("required by %s at %s when %q is set (dependencies)", r.schema, ptr, k.Prop)).WithOrigin("dependencies")
			})
		}
	case *kind.DependentRequired:
		for _, name := range k.Missing {
			memberError(name, func(fp *field.Path, ptr string) *field.Error {
				return field.Required(fp, fmt.Sprintf("required by %s at %s when %q is set (dependentRequired)", r.schema, ptr, k.Prop)).WithOrigin("dependentRequired")
			})
		}
	case *kind.AdditionalProperties:
		for _, name := range k.Properties {
			memberError(name, func(fp *field.Path, ptr string) *field.Error {
				return field.Forbidden(fp, fmt.Sprintf(
					"not allowed by %s at %s: the schema does not list this parameter and allows no others (additionalProperties: false)",
					r.schema, ptr)).WithOrigin("additionalProperties")
			})
		}
	case *kind.FalseSchema:
		r.errs = append(r.errs, field.Forbidden(fp, fmt.Sprintf(
			"not allowed by %s at %s: the schema allows no value here", r.schema, ptr)).WithOrigin("false"))
	case *kind.PropertyNames:
		memberError(k.Property, func(fp *field.Path, _ string) *field.Error {
			return field.Invalid(fp, shownValue(k.Property), fmt.Sprintf(
				"parameter name does not match %s at %s: %s", r.schema, ptr, describe(e))).WithOrigin("propertyNames")
		})
	default:
		r.errs = append(r.errs, field.Invalid(fp, shownValue(v), fmt.Sprintf(
			"does not match %s at %s: %s", r.schema, ptr, describe(e))).WithOrigin(keyword(e.ErrorKind)))
	}
}

// keyword is the JSON Schema keyword behind an error kind.
func keyword(k jsonschema.ErrorKind) string {
	switch k.(type) {
	case nil:
		return ""
	case *kind.Not:
		return "not"
	case *kind.FalseSchema:
		return "false"
	case *kind.Dependency:
		return "dependencies"
	}
	if kp := k.KeywordPath(); len(kp) > 0 {
		return kp[0]
	}
	return ""
}

// sortErrors sorts errors by field, type and message, and drops exact
// duplicates (two subschemas may require the same parameter).
func sortErrors(errs field.ErrorList) field.ErrorList {
	slices.SortStableFunc(errs, func(a, b *field.Error) int {
		return cmp.Or(cmp.Compare(a.Field, b.Field), cmp.Compare(a.Type, b.Type), cmp.Compare(a.Detail, b.Detail))
	})
	return slices.CompactFunc(errs, func(a, b *field.Error) bool {
		return a.Field == b.Field && a.Type == b.Type && a.Detail == b.Detail
	})
}
