package schema

import (
	"encoding/json"
	"strconv"
	"strings"
)

// jsonEqual compares two decoded JSON values by meaning: objects by their
// members whatever their order, numbers by value however they are written
// (1, 1.0, 10e-1 and 0.1e1 are equal).
func jsonEqual(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case string:
		y, ok := b.(string)
		return ok && x == y
	case json.Number:
		y, ok := b.(json.Number)
		return ok && numbersEqual(string(x), string(y))
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !jsonEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case object:
		y, ok := b.(object)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !jsonEqual(xv, yv) {
				return false
			}
		}
		return true
	}
	return false
}

// numbersEqual compares two JSON numbers exactly, without limits on their
// size: numbers that do not parse are equal only when spelled the same.
func numbersEqual(a, b string) bool {
	if a == b {
		return true
	}
	ca, okA := canonicalNumber(a)
	cb, okB := canonicalNumber(b)
	return okA && okB && ca == cb
}

// canonicalNumber writes a JSON number as sign, significant digits and
// exponent ("-12e-3"): the same text for every spelling of one value.
func canonicalNumber(s string) (string, bool) {
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	intPart, s := leadingDigits(s)
	if intPart == "" {
		return "", false
	}
	var frac string
	if strings.HasPrefix(s, ".") {
		if frac, s = leadingDigits(s[1:]); frac == "" {
			return "", false
		}
	}
	exp := 0
	if s != "" && (s[0] == 'e' || s[0] == 'E') {
		s = s[1:]
		expNeg := false
		if s != "" && (s[0] == '+' || s[0] == '-') {
			expNeg = s[0] == '-'
			s = s[1:]
		}
		var digits string
		digits, s = leadingDigits(s)
		if digits == "" {
			return "", false
		}
		digits = strings.TrimLeft(digits, "0")
		if len(digits) > 15 {
			return "", false // beyond any exponent worth comparing exactly
		}
		if digits != "" {
			exp, _ = strconv.Atoi(digits)
		}
		if expNeg {
			exp = -exp
		}
	}
	if s != "" {
		return "", false
	}
	digits := strings.TrimLeft(intPart+frac, "0")
	exp -= len(frac)
	trimmed := strings.TrimRight(digits, "0")
	exp += len(digits) - len(trimmed)
	if trimmed == "" {
		return "0", true // -0 and 0 are the same value
	}
	sign := ""
	if neg {
		sign = "-"
	}
	return sign + trimmed + "e" + strconv.Itoa(exp), true
}

// leadingDigits splits s after its leading ASCII digits.
func leadingDigits(s string) (digits, rest string) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return s[:i], s[i:]
}
