package schema

import (
	"encoding/json"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/lockstep-dev/lockstep/internal/jsonnum"
)

// Bounds of the quick check: how often it may follow "$ref", "allOf" and
// the like without moving into a member or item (a schema that refers to
// itself there is a cycle the library reports), and the longest array it
// checks for "uniqueItems".
const (
	maxQuickHops   = 32
	maxQuickUnique = 64
)

// quickValid is a fast first check of a value against a compiled schema,
// for the keywords typical broker schemas use. It answers true only when
// the library would find the value valid; false means "invalid, or not
// sure", and the library then decides and explains. Valid parameters are
// the common case on every admission request, and the library's exact
// rational arithmetic and error bookkeeping cost several times what this
// check does.
//
// It reads the schema the library compiled, so "$ref", drafts and
// defaults are already resolved, and it mirrors the library's validator
// keyword by keyword. Keywords it does not check ("oneOf", "not", "if",
// "contains", "propertyNames", "$dynamicRef", "unevaluated*", content
// keywords, vocabulary extensions) make it answer false.
func quickValid(s *jsonschema.Schema, v any, hops int) bool {
	if s.Bool != nil {
		return *s.Bool
	}
	if hops > maxQuickHops || !quickSupported(s) {
		return false
	}
	if s.Types != nil && !s.Types.IsEmpty() && !typeAllowed(*s.Types, v) {
		return false
	}
	if s.Const != nil && !jsonnum.ValuesEqual(v, *s.Const) {
		return false
	}
	if s.Enum != nil && !inEnum(v, s.Enum.Values) {
		return false
	}
	if s.Format != nil && s.Format.Validate(v) != nil {
		return false
	}
	if s.Ref != nil {
		if !quickValid(s.Ref, v, hops+1) {
			return false
		}
		if s.DraftVersion < 2019 {
			return true // the drafts before 2019-09 ignore the keywords beside "$ref"
		}
	}
	switch v := v.(type) {
	case object:
		if !quickObject(s, v, hops) {
			return false
		}
	case []any:
		if !quickArray(s, v, hops) {
			return false
		}
	case string:
		if !quickString(s, v) {
			return false
		}
	case json.Number:
		if !quickNumber(s, v) {
			return false
		}
	}
	for _, sub := range s.AllOf {
		if !quickValid(sub, v, hops+1) {
			return false
		}
	}
	if len(s.AnyOf) > 0 {
		matched := false
		for _, sub := range s.AnyOf {
			if quickValid(sub, v, hops+1) {
				matched = true
				break
			}
		}
		if !matched {
			return false
		}
	}
	return true
}

// quickSupported reports whether quickValid checks every keyword s has.
func quickSupported(s *jsonschema.Schema) bool {
	return s.RecursiveRef == nil && s.DynamicRef == nil && s.Not == nil && len(s.OneOf) == 0 && s.If == nil &&
		s.PropertyNames == nil && s.UnevaluatedProperties == nil && s.UnevaluatedItems == nil &&
		s.Contains == nil && s.ContentEncoding == nil && s.ContentMediaType == nil && s.ContentSchema == nil &&
		len(s.Extensions) == 0
}

// typeAllowed mirrors the library's "type": an integer is a number whose
// value is whole, however it is written.
func typeAllowed(types jsonschema.Types, v any) bool {
	got := typeBit(v)
	if types&got != 0 {
		return true
	}
	return got == numberBit && types&integerBit != 0 && isWhole(v.(json.Number))
}

// The library's bit for each JSON type, learnt through its API.
var (
	nullBit, booleanBit, numberBit = typeBitOf("null"), typeBitOf("boolean"), typeBitOf("number")
	integerBit, stringBit          = typeBitOf("integer"), typeBitOf("string")
	arrayBit, objectBit            = typeBitOf("array"), typeBitOf("object")
)

func typeBitOf(name string) jsonschema.Types {
	var t jsonschema.Types
	t.Add(name)
	return t
}

// typeBit is the type of a decoded value.
func typeBit(v any) jsonschema.Types {
	switch v.(type) {
	case nil:
		return nullBit
	case bool:
		return booleanBit
	case json.Number:
		return numberBit
	case string:
		return stringBit
	case []any:
		return arrayBit
	case object:
		return objectBit
	}
	return 0
}

// isWhole reports whether a number is an integer: 3, 3.0, 30e-1.
func isWhole(n json.Number) bool {
	if !strings.ContainsAny(string(n), ".eE") {
		return true
	}
	c, ok := jsonnum.Canonical(string(n))
	if !ok {
		return false
	}
	_, exp, _ := strings.Cut(c, "e")
	return c == "0" || !strings.HasPrefix(exp, "-")
}

func inEnum(v any, values []any) bool {
	for _, e := range values {
		if jsonnum.ValuesEqual(v, e) {
			return true
		}
	}
	return false
}

func quickObject(s *jsonschema.Schema, obj object, hops int) bool {
	if (s.MinProperties != nil && len(obj) < *s.MinProperties) || (s.MaxProperties != nil && len(obj) > *s.MaxProperties) {
		return false
	}
	for _, name := range s.Required {
		if _, ok := obj[name]; !ok {
			return false
		}
	}
	for name, dep := range s.Dependencies {
		if _, ok := obj[name]; !ok {
			continue
		}
		switch dep := dep.(type) {
		case []string:
			for _, need := range dep {
				if _, ok := obj[need]; !ok {
					return false
				}
			}
		case *jsonschema.Schema:
			if !quickValid(dep, obj, hops+1) {
				return false
			}
		default:
			return false
		}
	}
	for name, needs := range s.DependentRequired {
		if _, ok := obj[name]; ok {
			for _, need := range needs {
				if _, ok := obj[need]; !ok {
					return false
				}
			}
		}
	}
	for name, dep := range s.DependentSchemas {
		if _, ok := obj[name]; ok && !quickValid(dep, obj, hops+1) {
			return false
		}
	}
	for name, v := range obj {
		evaluated := false
		if sub, ok := s.Properties[name]; ok {
			evaluated = true
			if !quickValid(sub, v, 0) {
				return false
			}
		}
		for re, sub := range s.PatternProperties {
			if re.MatchString(name) {
				evaluated = true
				if !quickValid(sub, v, 0) {
					return false
				}
			}
		}
		if evaluated {
			continue
		}
		switch additional := s.AdditionalProperties.(type) {
		case nil:
		case bool:
			if !additional {
				return false
			}
		case *jsonschema.Schema:
			if !quickValid(additional, v, 0) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

func quickArray(s *jsonschema.Schema, arr []any, hops int) bool {
	if (s.MinItems != nil && len(arr) < *s.MinItems) || (s.MaxItems != nil && len(arr) > *s.MaxItems) {
		return false
	}
	if s.UniqueItems && len(arr) > 1 {
		if len(arr) > maxQuickUnique {
			return false
		}
		for i := range arr {
			for j := i + 1; j < len(arr); j++ {
				if jsonnum.ValuesEqual(arr[i], arr[j]) {
					return false
				}
			}
		}
	}
	evaluated := 0
	if s.DraftVersion < 2020 {
		switch items := s.Items.(type) {
		case nil:
		case *jsonschema.Schema:
			evaluated = len(arr)
			if !allValid(items, arr, 0) {
				return false
			}
		case []*jsonschema.Schema:
			evaluated = min(len(arr), len(items))
			for i := range evaluated {
				if !quickValid(items[i], arr[i], 0) {
					return false
				}
			}
		default:
			return false
		}
		switch additional := s.AdditionalItems.(type) {
		case nil:
		case bool:
			return additional || evaluated == len(arr)
		case *jsonschema.Schema:
			return allValid(additional, arr[evaluated:], 0)
		default:
			return false
		}
		return true
	}
	evaluated = min(len(arr), len(s.PrefixItems))
	for i := range evaluated {
		if !quickValid(s.PrefixItems[i], arr[i], 0) {
			return false
		}
	}
	return s.Items2020 == nil || allValid(s.Items2020, arr[evaluated:], 0)
}

func allValid(s *jsonschema.Schema, values []any, hops int) bool {
	for _, v := range values {
		if !quickValid(s, v, hops) {
			return false
		}
	}
	return true
}

func quickString(s *jsonschema.Schema, str string) bool {
	if s.MinLength != nil || s.MaxLength != nil {
		n := utf8.RuneCountInString(str)
		if (s.MinLength != nil && n < *s.MinLength) || (s.MaxLength != nil && n > *s.MaxLength) {
			return false
		}
	}
	return s.Pattern == nil || s.Pattern.MatchString(str)
}

// quickNumber checks the number keywords; a whole number of up to 18
// digits is compared without big.Rat.
func quickNumber(s *jsonschema.Schema, n json.Number) bool {
	if s.Minimum == nil && s.Maximum == nil && s.ExclusiveMinimum == nil && s.ExclusiveMaximum == nil && s.MultipleOf == nil {
		return true
	}
	small, isSmall := smallInt(n)
	var rat *big.Rat
	cmp := func(bound *big.Rat) (int, bool) {
		if isSmall && bound.IsInt() && bound.Num().IsInt64() {
			b := bound.Num().Int64()
			switch {
			case small < b:
				return -1, true
			case small > b:
				return 1, true
			}
			return 0, true
		}
		if rat == nil {
			var ok bool
			if rat, ok = new(big.Rat).SetString(string(n)); !ok {
				return 0, false
			}
		}
		return rat.Cmp(bound), true
	}
	for _, check := range []struct {
		bound *big.Rat
		ok    func(int) bool
	}{
		{s.Minimum, func(c int) bool { return c >= 0 }},
		{s.Maximum, func(c int) bool { return c <= 0 }},
		{s.ExclusiveMinimum, func(c int) bool { return c > 0 }},
		{s.ExclusiveMaximum, func(c int) bool { return c < 0 }},
	} {
		if check.bound == nil {
			continue
		}
		if c, ok := cmp(check.bound); !ok || !check.ok(c) {
			return false
		}
	}
	if s.MultipleOf != nil {
		if rat == nil {
			var ok bool
			if rat, ok = new(big.Rat).SetString(string(n)); !ok {
				return false
			}
		}
		if !new(big.Rat).Quo(rat, s.MultipleOf).IsInt() {
			return false
		}
	}
	return true
}

// smallInt parses a number written as a whole number of at most 18 digits.
func smallInt(n json.Number) (int64, bool) {
	s := string(n)
	digits := strings.TrimPrefix(s, "-")
	if len(digits) == 0 || len(digits) > 18 || strings.ContainsAny(digits, ".eE") {
		return 0, false
	}
	i, err := strconv.ParseInt(s, 10, 64)
	return i, err == nil
}
