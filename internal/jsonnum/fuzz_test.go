package jsonnum

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/big"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/lockstep-dev/lockstep/test/fuzzrun"
)

// The differential tests of this package: Equal and ValuesEqual against
// encoding/json, which reads every number as a float64, and against exact
// rational arithmetic (math/big), which encoding/json cannot do.
//
// The domain is what their callers pass: numbers as a JSON decoder with
// UseNumber returns them (the text of a valid JSON number), and values
// such a decoder returns. A number's exponent is compared exactly when it
// has at most 9 digits, leading zeros aside; beyond that Equal compares
// spellings (such numbers are out of every range the callers check), so
// the exact comparison here keeps to exponents within ±1000 and the float
// comparisons to what a float64 holds.

var numberTarget = fuzzrun.Target{
	Name: "FuzzNumbers",
	Seeds: [][][]byte{
		{[]byte("1"), []byte("1.0")},
		{[]byte("10e-1"), []byte("0.1e1")},
		{[]byte("-0"), []byte("0e10")},
		{[]byte("12345678901234567890"), []byte("12345678901234567891")},
		{[]byte("9007199254740993"), []byte("9007199254740992")},
		{[]byte("1e400"), []byte("10e399")},
		{[]byte("-1.5E+3"), []byte("-1500")},
		{[]byte("0.000001"), []byte("1e-6")},
		{[]byte("1.7976931348623157e308"), []byte("17976931348623157e292")},
	},
	Inputs: 4000,
	Dict:   []string{"0", "1", "9", "-", ".", "e", "E", "+", "e-", "00", "000000000", "5e-324", "1e308"},
}

// FuzzNumbers compares Equal and Canonical with encoding/json's float64
// and with exact rationals.
func FuzzNumbers(f *testing.F) {
	fuzzrun.Add(f, numberTarget)
	f.Fuzz(func(t *testing.T, a, b []byte) { checkNumbers(t, numberFrom(a), numberFrom(b)) })
}

func TestNumbersAgreeWithEncodingJSON(t *testing.T) {
	fuzzrun.Run(t, numberTarget, func(t *testing.T, in [][]byte) { checkNumbers(t, numberFrom(in[0]), numberFrom(in[1])) })
}

func checkNumbers(t *testing.T, a, b string) {
	for _, s := range []string{a, b} {
		if !isJSONNumber(s) {
			t.Fatalf("the generator made %q, which is not a JSON number", s)
		}
		c, ok := Canonical(s)
		if !ok {
			if expDigits(s) <= 9 {
				t.Fatalf("Canonical(%q) refuses a JSON number whose exponent has %d digits", s, expDigits(s))
			}
			continue
		}
		if !Equal(s, c) {
			t.Fatalf("Equal(%q, its canonical form %q) is false", s, c)
		}
	}
	got := Equal(a, b)
	if got != Equal(b, a) {
		t.Fatalf("Equal(%q, %q) is not symmetric", a, b)
	}
	// Exact values, where big.Rat can hold them.
	if ra, rb := exact(a), exact(b); ra != nil && rb != nil {
		if want := ra.Cmp(rb) == 0; got != want {
			t.Fatalf("Equal(%q, %q) = %v, but their exact values are %s and %s", a, b, got, ra.RatString(), rb.RatString())
		}
	}
	// encoding/json's float64: equal numbers read as equal floats, and
	// numbers a float64 holds exactly are equal when their floats are.
	fa, errA := float(a)
	fb, errB := float(b)
	if errA != nil || errB != nil {
		return
	}
	if got && fa != fb {
		t.Fatalf("Equal(%q, %q) is true, but encoding/json reads %v and %v", a, b, fa, fb)
	}
	if exactFloat(a, fa) && exactFloat(b, fb) && got != (fa == fb) {
		t.Fatalf("Equal(%q, %q) = %v, but encoding/json reads exactly %v and %v", a, b, got, fa, fb)
	}
}

// numberFrom returns in when it is a JSON number, else a JSON number
// spelled from its bytes (sign, digits, fraction, exponent).
func numberFrom(in []byte) string {
	if isJSONNumber(string(in)) {
		return string(in)
	}
	c := fuzzrun.Choices{Data: in}
	next := c.Next
	digits := func(n int, lead bool) string {
		var s strings.Builder
		for i := range n {
			d := next() % 10
			if i == 0 && !lead && n > 1 && d == 0 {
				d = 1
			}
			s.WriteByte(byte('0' + d))
		}
		return s.String()
	}
	var s strings.Builder
	if next()%2 == 1 {
		s.WriteByte('-')
	}
	s.WriteString(digits(1+next()%20, false))
	if next()%2 == 1 {
		s.WriteString("." + digits(1+next()%20, true))
	}
	if next()%2 == 1 {
		s.WriteString([]string{"e", "E", "e+", "e-", "E-"}[next()%5])
		s.WriteString(digits(1+next()%12, true))
	}
	return s.String()
}

// isJSONNumber reports whether s is one JSON number, as encoding/json
// reads it.
func isJSONNumber(s string) bool {
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil || d.More() {
		return false
	}
	n, ok := v.(json.Number)
	return ok && string(n) == s
}

// expDigits counts the digits of s's exponent, leading zeros aside.
func expDigits(s string) int {
	i := strings.IndexAny(s, "eE")
	if i < 0 {
		return 0
	}
	return len(strings.TrimLeft(strings.TrimLeft(s[i+1:], "+-"), "0"))
}

// exact is s as a rational; nil when its exponent is beyond ±1000.
func exact(s string) *big.Rat {
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.Atoi(strings.TrimLeft(s[i+1:], "+"))
		if err != nil || e > 1000 || e < -1000 {
			return nil
		}
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return nil
	}
	return r
}

// float reads s as encoding/json reads a number into a float64.
func float(s string) (float64, error) {
	var f float64
	err := json.Unmarshal([]byte(s), &f)
	return f, err
}

// exactFloat reports whether f is exactly the number s.
func exactFloat(s string, f float64) bool {
	r := exact(s)
	if r == nil {
		return false
	}
	fr, ok := new(big.Rat).SetString(strconv.FormatFloat(f, 'g', -1, 64))
	return ok && fr.Cmp(r) == 0
}

var valuesTarget = fuzzrun.Target{
	Name: "FuzzValuesEqual",
	Seeds: [][][]byte{
		{[]byte(`{"a": 1, "b": [1, 2]}`), []byte(`{"b": [1.0, 2], "a": 1}`)},
		{[]byte(`{"a": 1}`), []byte(`{"a": 1, "b": null}`)},
		{[]byte(`[1, 2]`), []byte(`[2, 1]`)},
		{[]byte(`[]`), []byte(`{}`)},
		{[]byte(`{"a":{"b":"c"}}`), []byte(`{"a":{"b":"d"}}`)},
		{[]byte(`[12345678901234567890]`), []byte(`[12345678901234567891]`)},
		{[]byte(`{"a":1,"a":2}`), []byte(`{"a":2}`)},
		{[]byte(`["\u00e9", true, null, -0]`), []byte(`["é", true, null, 0]`)},
		{[]byte(`{"n":1e400}`), []byte(`{"n":10e399}`)},
	},
	Inputs: 3000,
}

// FuzzValuesEqual compares ValuesEqual with encoding/json's decoding into
// any (numbers as float64) followed by reflect.DeepEqual, and with an exact
// comparison.
func FuzzValuesEqual(f *testing.F) {
	fuzzrun.Add(f, valuesTarget)
	f.Fuzz(func(t *testing.T, a, b []byte) { checkValues(t, a, b) })
}

func TestValuesEqualAgreesWithEncodingJSON(t *testing.T) {
	fuzzrun.Run(t, valuesTarget, func(t *testing.T, in [][]byte) { checkValues(t, in[0], in[1]) })
}

func checkValues(t *testing.T, a, b []byte) {
	va, errA := decodeNumbers(a)
	vb, errB := decodeNumbers(b)
	if errA != nil || errB != nil {
		return // not JSON: outside the domain
	}
	got := ValuesEqual(va, vb)
	if got != ValuesEqual(vb, va) {
		t.Fatalf("ValuesEqual(%s, %s) is not symmetric", a, b)
	}
	if !ValuesEqual(va, va) {
		t.Fatalf("ValuesEqual(%s, itself) is false", a)
	}
	ea, okA := exactTree(va)
	eb, okB := exactTree(vb)
	if okA && okB {
		if want := reflect.DeepEqual(ea, eb); got != want {
			t.Fatalf("ValuesEqual(%s, %s) = %v, but exactly they are %v and %v", a, b, got, ea, eb)
		}
	}
	var fa, fb any
	if json.Unmarshal(a, &fa) != nil || json.Unmarshal(b, &fb) != nil {
		return // a number beyond float64
	}
	floatsEqual := reflect.DeepEqual(fa, fb)
	if got && !floatsEqual {
		t.Fatalf("ValuesEqual(%s, %s) is true, but encoding/json reads %v and %v", a, b, fa, fb)
	}
	if okA && okB && exactFloats(va) && exactFloats(vb) && got != floatsEqual {
		t.Fatalf("ValuesEqual(%s, %s) = %v, but encoding/json reads exactly %v and %v", a, b, got, fa, fb)
	}
}

// decodeNumbers decodes one JSON document with UseNumber, as the callers
// of ValuesEqual do.
func decodeNumbers(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, errors.New("data after the value")
	}
	if _, err := d.Token(); err == nil {
		return nil, errors.New("data after the value")
	}
	return v, nil
}

// exactTree replaces every number by its exact value's text; false when a
// number's exponent is beyond what exact holds.
func exactTree(v any) (any, bool) {
	switch x := v.(type) {
	case json.Number:
		r := exact(string(x))
		if r == nil {
			return nil, false
		}
		return "number " + r.RatString(), true
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			var ok bool
			if out[i], ok = exactTree(e); !ok {
				return nil, false
			}
		}
		return out, true
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			var ok bool
			if out[k], ok = exactTree(e); !ok {
				return nil, false
			}
		}
		return out, true
	case string:
		return "string " + x, true
	}
	return v, true
}

// exactFloats reports whether a float64 holds every number of v exactly.
func exactFloats(v any) bool {
	switch x := v.(type) {
	case json.Number:
		f, err := float(string(x))
		return err == nil && exactFloat(string(x), f)
	case []any:
		for _, e := range x {
			if !exactFloats(e) {
				return false
			}
		}
	case map[string]any:
		for _, e := range x {
			if !exactFloats(e) {
				return false
			}
		}
	}
	return true
}
