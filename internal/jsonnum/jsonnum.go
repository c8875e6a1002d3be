// Package jsonnum compares JSON numbers by value, however they are
// written (1, 1.0, 10e-1 and 0.1e1 are the same number), exactly and
// without limits on their size, and decoded JSON values by meaning
// (ValuesEqual). internal/validate and its schema checks both compare
// JSON with it.
package jsonnum

import (
	"strconv"
	"strings"
)

// Equal compares two JSON numbers exactly: 1, 1.0, 10e-1 and 0.1e1
// are the same number.
func Equal(a, b string) bool {
	if a == b {
		return true
	}
	ca, okA := Canonical(a)
	cb, okB := Canonical(b)
	return okA && okB && ca == cb
}

// Canonical writes a JSON number as sign, significant digits and
// exponent ("-12e-3"), the same text for every spelling of the same value.
func Canonical(s string) (string, bool) {
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	intPart, s := LeadingDigits(s)
	if intPart == "" {
		return "", false
	}
	var frac string
	if strings.HasPrefix(s, ".") {
		frac, s = LeadingDigits(s[1:])
		if frac == "" {
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
		digits, s = LeadingDigits(s)
		if digits == "" {
			return "", false
		}
		// Leading zeros say nothing ("1e007" is 1e7); past 9 digits the
		// exponent is too far out to care.
		if digits = strings.TrimLeft(digits, "0"); len(digits) > 9 {
			return "", false
		}
		exp, _ = strconv.Atoi(digits)
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
		return "0", true
	}
	sign := ""
	if neg {
		sign = "-"
	}
	return sign + trimmed + "e" + strconv.Itoa(exp), true
}

// LeadingDigits splits s after its leading ASCII digits.
func LeadingDigits(s string) (digits, rest string) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return s[:i], s[i:]
}
