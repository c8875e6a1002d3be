package schema

import (
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Bounds on how much a message tells about the alternatives of a failed
// "anyOf" or "oneOf".
const (
	maxReasonsPerAlternative = 3
	maxDescription           = 1000
)

// english prints the library's own messages, for error kinds this file
// does not word itself.
var english = message.NewPrinter(language.English)

// describe says in words what a violation wants, without where: "must be
// <= 100". Its JSON pointer and schema are for the caller to add.
func describe(e *jsonschema.ValidationError) string {
	return cut(describeKind(e), maxDescription)
}

func describeKind(e *jsonschema.ValidationError) string {
	switch k := e.ErrorKind.(type) {
	case nil:
		return "does not match"
	case *kind.Type:
		return fmt.Sprintf("must be of type %s, not %s", strings.Join(k.Want, " or "), k.Got)
	case *kind.Enum:
		if len(k.Want) == 1 {
			return "must be " + compactJSON(k.Want[0])
		}
		return "must be one of " + valueList(k.Want)
	case *kind.Const:
		return "must be " + compactJSON(k.Want)
	case *kind.Format:
		if k.Err != nil {
			return fmt.Sprintf("must be a valid %s: %v", k.Want, k.Err)
		}
		return "must be a valid " + k.Want
	case *kind.MinProperties:
		return fmt.Sprintf("must have at least %d %s, has %d", k.Want, plural(k.Want, "property", "properties"), k.Got)
	case *kind.MaxProperties:
		return fmt.Sprintf("must have at most %d %s, has %d", k.Want, plural(k.Want, "property", "properties"), k.Got)
	case *kind.MinItems:
		return fmt.Sprintf("must have at least %d %s, has %d", k.Want, plural(k.Want, "item", "items"), k.Got)
	case *kind.MaxItems:
		return fmt.Sprintf("must have at most %d %s, has %d", k.Want, plural(k.Want, "item", "items"), k.Got)
	case *kind.AdditionalItems:
		return fmt.Sprintf("has %d more %s than the schema allows (additionalItems)", k.Count, plural(k.Count, "item", "items"))
	case *kind.UniqueItems:
		return fmt.Sprintf("items %d and %d are equal, but the items must be unique", k.Duplicates[0], k.Duplicates[1])
	case *kind.Contains:
		return `must contain an item that matches the "contains" schema`
	case *kind.MinContains:
		return fmt.Sprintf(`must contain at least %d %s that %s the "contains" schema, has %d`, k.Want, plural(k.Want, "item", "items"), plural(k.Want, "matches", "match"), len(k.Got))
	case *kind.MaxContains:
		return fmt.Sprintf(`must contain at most %d %s that %s the "contains" schema, has %d`, k.Want, plural(k.Want, "item", "items"), plural(k.Want, "matches", "match"), len(k.Got))
	case *kind.MinLength:
		return fmt.Sprintf("must be at least %d %s long, is %d", k.Want, plural(k.Want, "character", "characters"), k.Got)
	case *kind.MaxLength:
		return fmt.Sprintf("must be at most %d %s long, is %d", k.Want, plural(k.Want, "character", "characters"), k.Got)
	case *kind.Pattern:
		return `must match the regular expression "` + k.Want + `"`
	case *kind.Minimum:
		return "must be >= " + ratString(k.Want)
	case *kind.Maximum:
		return "must be <= " + ratString(k.Want)
	case *kind.ExclusiveMinimum:
		return "must be > " + ratString(k.Want)
	case *kind.ExclusiveMaximum:
		return "must be < " + ratString(k.Want)
	case *kind.MultipleOf:
		return "must be a multiple of " + ratString(k.Want)
	case *kind.Not:
		return `must not match the schema under "not"`
	case *kind.FalseSchema:
		return "no value is allowed here (false schema)"
	case *kind.Required:
		return "missing required " + plural(len(k.Missing), "property ", "properties ") + quotedList(k.Missing)
	case *kind.Dependency:
		return fmt.Sprintf("%s %s required when %q is set", quotedList(k.Missing), plural(len(k.Missing), "is", "are"), k.Prop)
	case *kind.DependentRequired:
		return fmt.Sprintf("%s %s required when %q is set", quotedList(k.Missing), plural(len(k.Missing), "is", "are"), k.Prop)
	case *kind.AdditionalProperties:
		return fmt.Sprintf("%s %s not allowed (additionalProperties: false)", plural(len(k.Properties), "property ", "properties ")+quotedList(k.Properties), plural(len(k.Properties), "is", "are"))
	case *kind.PropertyNames:
		return fmt.Sprintf("name %q %s", k.Property, causesText(e))
	case *kind.AnyOf:
		return "must match at least one of the anyOf alternatives: " + alternativesText(e)
	case *kind.OneOf:
		if len(k.Subschemas) == 2 {
			return fmt.Sprintf("must match exactly one of the oneOf alternatives, but matches alternatives %d and %d", k.Subschemas[0], k.Subschemas[1])
		}
		return "must match exactly one of the oneOf alternatives, but matches none: " + alternativesText(e)
	case *kind.ContentSchema:
		return `its decoded content does not match the "contentSchema": ` + causesText(e)
	}
	return e.ErrorKind.LocalizedString(english)
}

// alternativesText lists why each alternative of a failed "anyOf" or
// "oneOf" failed: "[0] must be of type string, not boolean; [1] ...". The
// library lists the failures of every alternative, in order.
func alternativesText(e *jsonschema.ValidationError) string {
	parts := make([]string, len(e.Causes))
	for i, c := range e.Causes {
		parts[i] = fmt.Sprintf("[%d] %s", i, reasonsText(c, e.InstanceLocation))
	}
	return strings.Join(parts, "; ")
}

// causesText says why an error with causes failed.
func causesText(e *jsonschema.ValidationError) string {
	if len(e.Causes) == 0 {
		return "does not match"
	}
	var parts []string
	for _, c := range e.Causes {
		parts = append(parts, reasonsText(c, e.InstanceLocation))
	}
	return strings.Join(parts, ", ")
}

// reasonsText describes the violations under e, each with its JSON pointer
// when that is not the pointer "at".
func reasonsText(e *jsonschema.ValidationError, at []string) string {
	ls := leaves(e)
	var parts []string
	for i, l := range ls {
		if i == maxReasonsPerAlternative {
			parts = append(parts, fmt.Sprintf("and %d more", len(ls)-i))
			break
		}
		s := describe(l)
		if !slices.Equal(l.InstanceLocation, at) {
			s = "at " + pointer(l.InstanceLocation) + ": " + s
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// ratString writes a schema's number exactly where that is short, else
// approximately.
func ratString(r *big.Rat) string {
	if r == nil {
		return "?"
	}
	if r.IsInt() {
		if s := r.Num().String(); len(s) <= 30 {
			return s
		}
	} else if prec, exact := r.FloatPrec(); exact && prec <= 30 {
		return r.FloatString(prec)
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// valueList writes enum values as compact JSON: "a", "b", 3.
func valueList(values []any) string {
	parts := make([]string, 0, len(values))
	for i, v := range values {
		if i == 20 {
			parts = append(parts, fmt.Sprintf("and %d more", len(values)-i))
			break
		}
		parts = append(parts, compactJSON(v))
	}
	return strings.Join(parts, ", ")
}

// quotedList writes names as "a", "b".
func quotedList(names []string) string {
	names = slices.Sorted(slices.Values(names))
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = strconv.Quote(n)
	}
	return strings.Join(parts, ", ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
