package credentials

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"text/template"
)

// funcs are the functions a template runs with against b: the function
// that wraps ranges, and in place of the standard functions that can work
// on much text, the same functions with a bound. The others (and, or,
// not, len, slice, call) work in constant time on the values a Secret's
// template sees.
func (b *budget) funcs() template.FuncMap {
	return template.FuncMap{
		rangeFunc:  b.ranges,
		"print":    b.print,
		"printf":   b.printf,
		"println":  b.println,
		"html":     b.escaper(template.HTMLEscaper),
		"js":       b.escaper(template.JSEscaper),
		"urlquery": b.escaper(template.URLQueryEscaper),
		"eq":       b.eq,
		"ne":       b.ne,
		"lt":       b.lt,
		"le":       b.le,
		"gt":       b.gt,
		"ge":       b.ge,
		"index":    b.index,
	}
}

// ranges charges the passes a range is about to make over v, weight
// steps each, and hands v on: a number passes that many times; a map, a
// slice, an array, a string or a channel as many times as its length
// (the range refuses a string itself), a map mapPassWeight more each for
// sorting its keys.
func (b *budget) ranges(weight int, v reflect.Value) (reflect.Value, error) {
	passes := 0
	switch w := indirectInterface(v); w.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		passes = int(min(max(w.Int(), 0), saturated))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		passes = int(min(w.Uint(), saturated))
	case reflect.Map:
		passes, weight = w.Len(), add(weight, mapPassWeight)
	case reflect.Slice, reflect.Array, reflect.String, reflect.Chan:
		passes = w.Len()
	}
	return v, b.step(mul(passes, weight))
}

// The most text the bounded functions may make from their arguments: html
// escapes a byte into at most 5 bytes (&#34;), js into 6 (\u003C),
// urlquery into 3 (%2F); fmt prints a string at most 5 times as long
// (% #x: "0x61 "), a number, a boolean or nil in at most numberText
// bytes beyond a verb's width and precision (%f of 1e308: 309 digits),
// each of which is at most fmtMaxNum (fmt's own bound), and a verb's or an
// extra argument's decoration (%!d(string=...), %!(EXTRA ...)) in at most
// verbText.
// mapPassWeight is what a pass over a map takes besides passWeight: the
// range sorts the keys first.
const mapPassWeight = 8

const (
	escapeFactor = 6
	fmtFactor    = 5
	numberText   = 400
	verbText     = 64
	fmtMaxNum    = 1_000_000
)

func (b *budget) print(args ...any) (string, error) {
	if err := b.spendFor(printBound(args)); err != nil {
		return "", err
	}
	return fmt.Sprint(args...), nil
}

func (b *budget) println(args ...any) (string, error) {
	if err := b.spendFor(printBound(args)); err != nil {
		return "", err
	}
	return fmt.Sprintln(args...), nil
}

func (b *budget) printf(format string, args ...any) (string, error) {
	if err := b.spendFor(printfBound(format, args)); err != nil {
		return "", err
	}
	return fmt.Sprintf(format, args...), nil
}

// escaper bounds one of text/template's escaping functions.
func (b *budget) escaper(escape func(...any) string) func(...any) (string, error) {
	return func(args ...any) (string, error) {
		n, err := printBound(args)
		if err := b.spendFor(mul(n, escapeFactor), err); err != nil {
			return "", err
		}
		return escape(args...), nil
	}
}

// spendFor spends the bound a function worked out, or fails with the
// reason it could not.
func (b *budget) spendFor(n int, err error) error {
	if err != nil {
		return err
	}
	return b.spend(n)
}

// printBound is the most fmt.Sprint or fmt.Sprintln (and the text the
// escaping functions start from) make of args.
func printBound(args []any) (int, error) {
	total := 1
	for _, a := range args {
		n, err := textBound(a)
		if err != nil {
			return 0, err
		}
		total = add(total, n+1)
	}
	return total, nil
}

// printfBound is the most fmt.Sprintf makes of format and args. Without
// explicit argument indexes each argument is printed at most once (by its
// verb, or among the extra arguments); with them any verb may print the
// largest one.
func printfBound(format string, args []any) (int, error) {
	verbs := strings.Count(format, "%")
	widest := largestNumber(format)
	if strings.Contains(format, "*") {
		widest = fmtMaxNum
	}
	total := add(len(format), mul(verbs, add(mul(3, widest), verbText)))
	largest := 0
	for _, a := range args {
		n, err := textBound(a)
		if err != nil {
			return 0, err
		}
		largest = max(largest, n)
		total = add(total, add(mul(fmtFactor, n), verbText))
	}
	if strings.Contains(format, "[") {
		total = add(total, mul(verbs, mul(fmtFactor, largest)))
	}
	return total, nil
}

// largestNumber is the largest run of digits in s, at most fmtMaxNum.
func largestNumber(s string) int {
	largest, cur := 0, 0
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= '0' && c <= '9' {
			cur = min(cur*10+int(c-'0'), fmtMaxNum)
			largest = max(largest, cur)
			continue
		}
		cur = 0
	}
	return largest
}

// textBound is the most text fmt's %v makes of a value a template holds:
// a string's length, a map's keys and values with room for their
// punctuation, and numberText for a number, a boolean or nil.
func textBound(a any) (int, error) {
	v := reflect.ValueOf(a)
	switch v.Kind() {
	case reflect.Invalid, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return numberText, nil
	case reflect.String:
		return v.Len(), nil
	case reflect.Map:
		if v.Type().Key().Kind() != reflect.String || v.Type().Elem().Kind() != reflect.String {
			break
		}
		total := verbText
		for it := v.MapRange(); it.Next(); {
			total = add(total, it.Key().Len()+it.Value().Len()+16)
		}
		return total, nil
	}
	return 0, fmt.Errorf("cannot print a value of type %s", v.Type())
}

// chargeStrings spends the length of the strings among vs: what comparing
// them or looking them up costs.
func (b *budget) chargeStrings(vs ...reflect.Value) error {
	n := 0
	for _, v := range vs {
		if v = indirectInterface(v); v.Kind() == reflect.String {
			n = add(n, v.Len())
		}
	}
	return b.spend(n)
}

// The comparisons and index below are text/template's own (Go 1.26,
// text/template/funcs.go), ported so that they charge the strings they
// compare and look up; TestFuncsAsStandard holds them to the standard
// ones.

var (
	errBadComparisonType = errors.New("invalid type for comparison")
	errNoComparison      = errors.New("missing argument for comparison")
)

type kind int

const (
	invalidKind kind = iota
	boolKind
	complexKind
	intKind
	floatKind
	stringKind
	uintKind
)

func basicKind(v reflect.Value) (kind, error) {
	switch v.Kind() {
	case reflect.Bool:
		return boolKind, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return intKind, nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return uintKind, nil
	case reflect.Float32, reflect.Float64:
		return floatKind, nil
	case reflect.Complex64, reflect.Complex128:
		return complexKind, nil
	case reflect.String:
		return stringKind, nil
	}
	return invalidKind, errBadComparisonType
}

func isNil(v reflect.Value) bool {
	if !v.IsValid() {
		return true
	}
	switch v.Kind() {
	case reflect.Chan, reflect.Func, reflect.Interface, reflect.Map, reflect.Pointer, reflect.Slice:
		return v.IsNil()
	}
	return false
}

func canCompare(v1, v2 reflect.Value) bool {
	k1 := v1.Kind()
	k2 := v2.Kind()
	if k1 == k2 {
		return true
	}
	return k1 == reflect.Invalid || k2 == reflect.Invalid
}

func (b *budget) eq(arg1 reflect.Value, arg2 ...reflect.Value) (bool, error) {
	if err := b.chargeStrings(append([]reflect.Value{arg1}, arg2...)...); err != nil {
		return false, err
	}
	return eq(arg1, arg2...)
}

func eq(arg1 reflect.Value, arg2 ...reflect.Value) (bool, error) {
	arg1 = indirectInterface(arg1)
	if len(arg2) == 0 {
		return false, errNoComparison
	}
	k1, _ := basicKind(arg1)
	for _, arg := range arg2 {
		arg = indirectInterface(arg)
		k2, _ := basicKind(arg)
		truth := false
		if k1 != k2 {
			switch {
			case k1 == intKind && k2 == uintKind:
				truth = arg1.Int() >= 0 && uint64(arg1.Int()) == arg.Uint()
			case k1 == uintKind && k2 == intKind:
				truth = arg.Int() >= 0 && arg1.Uint() == uint64(arg.Int())
			default:
				if arg1.IsValid() && arg.IsValid() {
					return false, fmt.Errorf("incompatible types for comparison: %v and %v", arg1.Type(), arg.Type())
				}
			}
		} else {
			switch k1 {
			case boolKind:
				truth = arg1.Bool() == arg.Bool()
			case complexKind:
				truth = arg1.Complex() == arg.Complex()
			case floatKind:
				truth = arg1.Float() == arg.Float()
			case intKind:
				truth = arg1.Int() == arg.Int()
			case stringKind:
				truth = arg1.String() == arg.String()
			case uintKind:
				truth = arg1.Uint() == arg.Uint()
			default:
				if !canCompare(arg1, arg) {
					return false, fmt.Errorf("non-comparable types %s: %v, %s: %v", arg1, arg1.Type(), arg.Type(), arg)
				}
				if isNil(arg1) || isNil(arg) {
					truth = isNil(arg) == isNil(arg1)
				} else {
					if !arg.Type().Comparable() {
						return false, fmt.Errorf("non-comparable type %s: %v", arg, arg.Type())
					}
					truth = arg1.Interface() == arg.Interface()
				}
			}
		}
		if truth {
			return true, nil
		}
	}
	return false, nil
}

func (b *budget) ne(arg1, arg2 reflect.Value) (bool, error) {
	equal, err := b.eq(arg1, arg2)
	return !equal, err
}

func (b *budget) lt(arg1, arg2 reflect.Value) (bool, error) {
	if err := b.chargeStrings(arg1, arg2); err != nil {
		return false, err
	}
	return lt(arg1, arg2)
}

func lt(arg1, arg2 reflect.Value) (bool, error) {
	arg1 = indirectInterface(arg1)
	k1, err := basicKind(arg1)
	if err != nil {
		return false, err
	}
	arg2 = indirectInterface(arg2)
	k2, err := basicKind(arg2)
	if err != nil {
		return false, err
	}
	truth := false
	if k1 != k2 {
		switch {
		case k1 == intKind && k2 == uintKind:
			truth = arg1.Int() < 0 || uint64(arg1.Int()) < arg2.Uint()
		case k1 == uintKind && k2 == intKind:
			truth = arg2.Int() >= 0 && arg1.Uint() < uint64(arg2.Int())
		default:
			return false, fmt.Errorf("incompatible types for comparison: %v and %v", arg1.Type(), arg2.Type())
		}
	} else {
		switch k1 {
		case boolKind, complexKind:
			return false, errBadComparisonType
		case floatKind:
			truth = arg1.Float() < arg2.Float()
		case intKind:
			truth = arg1.Int() < arg2.Int()
		case stringKind:
			truth = arg1.String() < arg2.String()
		case uintKind:
			truth = arg1.Uint() < arg2.Uint()
		default:
			return false, errBadComparisonType
		}
	}
	return truth, nil
}

func (b *budget) le(arg1, arg2 reflect.Value) (bool, error) {
	if err := b.chargeStrings(arg1, arg2); err != nil {
		return false, err
	}
	lessThan, err := lt(arg1, arg2)
	if lessThan || err != nil {
		return lessThan, err
	}
	return eq(arg1, arg2)
}

func (b *budget) gt(arg1, arg2 reflect.Value) (bool, error) {
	lessOrEqual, err := b.le(arg1, arg2)
	if err != nil {
		return false, err
	}
	return !lessOrEqual, nil
}

func (b *budget) ge(arg1, arg2 reflect.Value) (bool, error) {
	lessThan, err := b.lt(arg1, arg2)
	if err != nil {
		return false, err
	}
	return !lessThan, nil
}

func (b *budget) index(item reflect.Value, indexes ...reflect.Value) (reflect.Value, error) {
	if err := b.chargeStrings(indexes...); err != nil {
		return reflect.Value{}, err
	}
	return index(item, indexes...)
}

func index(item reflect.Value, indexes ...reflect.Value) (reflect.Value, error) {
	item = indirectInterface(item)
	if !item.IsValid() {
		return reflect.Value{}, fmt.Errorf("index of untyped nil")
	}
	for _, index := range indexes {
		index = indirectInterface(index)
		var isNil bool
		if item, isNil = indirect(item); isNil {
			return reflect.Value{}, fmt.Errorf("index of nil pointer")
		}
		switch item.Kind() {
		case reflect.Array, reflect.Slice, reflect.String:
			x, err := indexArg(index, item.Len())
			if err != nil {
				return reflect.Value{}, err
			}
			item = item.Index(x)
		case reflect.Map:
			index, err := prepareArg(index, item.Type().Key())
			if err != nil {
				return reflect.Value{}, err
			}
			if x := item.MapIndex(index); x.IsValid() {
				item = x
			} else {
				item = reflect.Zero(item.Type().Elem())
			}
		default:
			return reflect.Value{}, fmt.Errorf("can't index item of type %s", item.Type())
		}
	}
	return item, nil
}

func indexArg(index reflect.Value, cap int) (int, error) {
	var x int64
	switch index.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		x = index.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		x = int64(index.Uint())
	case reflect.Invalid:
		return 0, fmt.Errorf("cannot index slice/array with nil")
	default:
		return 0, fmt.Errorf("cannot index slice/array with type %s", index.Type())
	}
	if x < 0 || int(x) < 0 || int(x) > cap {
		return 0, fmt.Errorf("index out of range: %d", x)
	}
	return int(x), nil
}

func prepareArg(value reflect.Value, argType reflect.Type) (reflect.Value, error) {
	if !value.IsValid() {
		if !canBeNil(argType) {
			return reflect.Value{}, fmt.Errorf("value is nil; should be of type %s", argType)
		}
		value = reflect.Zero(argType)
	}
	if value.Type().AssignableTo(argType) {
		return value, nil
	}
	if intLike(value.Kind()) && intLike(argType.Kind()) && value.Type().ConvertibleTo(argType) {
		value = value.Convert(argType)
		return value, nil
	}
	return reflect.Value{}, fmt.Errorf("value has type %s; should be %s", value.Type(), argType)
}

func intLike(typ reflect.Kind) bool {
	switch typ {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return true
	}
	return false
}

func canBeNil(typ reflect.Type) bool {
	switch typ.Kind() {
	case reflect.Chan, reflect.Func, reflect.Interface, reflect.Map, reflect.Pointer, reflect.Slice:
		return true
	case reflect.Struct:
		return typ == reflect.TypeFor[reflect.Value]()
	}
	return false
}

func indirect(v reflect.Value) (rv reflect.Value, isNil bool) {
	for ; v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface; v = v.Elem() {
		if v.IsNil() {
			return v, true
		}
	}
	return v, false
}

func indirectInterface(v reflect.Value) reflect.Value {
	if v.Kind() != reflect.Interface {
		return v
	}
	if v.IsNil() {
		return reflect.Value{}
	}
	return v.Elem()
}
