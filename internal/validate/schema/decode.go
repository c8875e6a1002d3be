package schema

import (
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// maxDecodeDepth is how deep decodeJSON follows nested objects and arrays,
// as encoding/json does.
const maxDecodeDepth = 10000

// decodeJSON decodes one JSON document as encoding/json does into an any
// with UseNumber (objects are map[string]any, numbers json.Number, invalid
// UTF-8 in strings becomes U+FFFD, the last of duplicate keys wins), in one
// pass and with fewer allocations: parameters are decoded on every
// admission request. beyondLimits reports whether the document nests deeper
// than maxNesting or holds a number that numberInRange refuses.
func decodeJSON(data []byte) (v any, beyondLimits bool, err error) {
	d := decoder{data: data, text: string(data)}
	d.skipSpace()
	v, err = d.value(0)
	if err != nil {
		return nil, false, err
	}
	d.skipSpace()
	if d.pos < len(d.data) {
		return nil, false, d.syntaxError("after the JSON value")
	}
	return v, d.beyondLimits, nil
}

type decoder struct {
	data []byte
	// text is data as one string: strings without escapes and numbers
	// are cut from it, sharing its memory, instead of being copied one by
	// one.
	text         string
	pos          int
	beyondLimits bool
	buf          []byte // scratch for strings with escapes
}

func (d *decoder) syntaxError(context string) error {
	if d.pos >= len(d.data) {
		return fmt.Errorf("unexpected end of JSON input")
	}
	return fmt.Errorf("invalid character %s %s (at byte %d)", quoteChar(d.data[d.pos]), context, d.pos)
}

// quoteChar writes a byte for an error message.
func quoteChar(c byte) string {
	if c == '\'' {
		return `'\''`
	}
	if c == '"' {
		return `'"'`
	}
	s := strconv.Quote(string(rune(c)))
	if c >= utf8.RuneSelf {
		s = fmt.Sprintf("%q", []byte{c})
	}
	return "'" + s[1:len(s)-1] + "'"
}

func (d *decoder) skipSpace() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

// value decodes the value at d.pos; depth is how many objects and arrays
// enclose it.
func (d *decoder) value(depth int) (any, error) {
	if d.pos >= len(d.data) {
		return nil, d.syntaxError("")
	}
	switch c := d.data[d.pos]; {
	case c == '{':
		return d.object(depth + 1)
	case c == '[':
		return d.array(depth + 1)
	case c == '"':
		return d.string()
	case c == '-' || (c >= '0' && c <= '9'):
		return d.number()
	case c == 't':
		return true, d.literal("true")
	case c == 'f':
		return false, d.literal("false")
	case c == 'n':
		return nil, d.literal("null")
	}
	return nil, d.syntaxError("looking for the beginning of a value")
}

func (d *decoder) literal(word string) error {
	for i := 0; i < len(word); i++ {
		if d.pos >= len(d.data) || d.data[d.pos] != word[i] {
			return d.syntaxError("in literal " + word)
		}
		d.pos++
	}
	return nil
}

func (d *decoder) enter(depth int) error {
	if depth > maxDecodeDepth {
		return fmt.Errorf("exceeded max depth: objects and arrays nest more than %d levels", maxDecodeDepth)
	}
	if depth > maxNesting {
		d.beyondLimits = true
	}
	return nil
}

func (d *decoder) object(depth int) (any, error) {
	if err := d.enter(depth); err != nil {
		return nil, err
	}
	d.pos++ // '{'
	obj := object{}
	d.skipSpace()
	if d.pos < len(d.data) && d.data[d.pos] == '}' {
		d.pos++
		return obj, nil
	}
	for {
		if d.pos >= len(d.data) || d.data[d.pos] != '"' {
			return nil, d.syntaxError("looking for the beginning of an object key string")
		}
		key, err := d.string()
		if err != nil {
			return nil, err
		}
		d.skipSpace()
		if d.pos >= len(d.data) || d.data[d.pos] != ':' {
			return nil, d.syntaxError("after object key")
		}
		d.pos++
		d.skipSpace()
		v, err := d.value(depth)
		if err != nil {
			return nil, err
		}
		obj[key] = v
		d.skipSpace()
		if d.pos >= len(d.data) {
			return nil, d.syntaxError("")
		}
		switch d.data[d.pos] {
		case ',':
			d.pos++
			d.skipSpace()
		case '}':
			d.pos++
			return obj, nil
		default:
			return nil, d.syntaxError("after object key:value pair")
		}
	}
}

func (d *decoder) array(depth int) (any, error) {
	if err := d.enter(depth); err != nil {
		return nil, err
	}
	d.pos++ // '['
	arr := []any{}
	d.skipSpace()
	if d.pos < len(d.data) && d.data[d.pos] == ']' {
		d.pos++
		return arr, nil
	}
	for {
		v, err := d.value(depth)
		if err != nil {
			return nil, err
		}
		arr = append(arr, v)
		d.skipSpace()
		if d.pos >= len(d.data) {
			return nil, d.syntaxError("")
		}
		switch d.data[d.pos] {
		case ',':
			d.pos++
			d.skipSpace()
		case ']':
			d.pos++
			return arr, nil
		default:
			return nil, d.syntaxError("after array element")
		}
	}
}

// number decodes a number as RFC 8259 writes it:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (d *decoder) number() (any, error) {
	start := d.pos
	if d.data[d.pos] == '-' {
		d.pos++
	}
	switch {
	case d.pos < len(d.data) && d.data[d.pos] == '0':
		d.pos++
	case d.pos < len(d.data) && d.data[d.pos] >= '1' && d.data[d.pos] <= '9':
		d.digits()
	default:
		return nil, d.syntaxError("in numeric literal")
	}
	if d.pos < len(d.data) && d.data[d.pos] == '.' {
		d.pos++
		if d.digits() == 0 {
			return nil, d.syntaxError("after decimal point in numeric literal")
		}
	}
	if d.pos < len(d.data) && (d.data[d.pos] == 'e' || d.data[d.pos] == 'E') {
		d.pos++
		if d.pos < len(d.data) && (d.data[d.pos] == '+' || d.data[d.pos] == '-') {
			d.pos++
		}
		if d.digits() == 0 {
			return nil, d.syntaxError("in exponent of numeric literal")
		}
	}
	n := json.Number(d.text[start:d.pos])
	if !d.beyondLimits && !numberInRange(string(n)) {
		d.beyondLimits = true
	}
	return n, nil
}

// digits skips ASCII digits and says how many.
func (d *decoder) digits() int {
	start := d.pos
	for d.pos < len(d.data) && d.data[d.pos] >= '0' && d.data[d.pos] <= '9' {
		d.pos++
	}
	return d.pos - start
}

// string decodes the string at d.pos (at its opening quote).
func (d *decoder) string() (string, error) {
	d.pos++ // '"'
	start := d.pos
	for d.pos < len(d.data) {
		c := d.data[d.pos]
		switch {
		case c == '"':
			s := d.text[start:d.pos]
			d.pos++
			return s, nil
		case c == '\\' || c >= utf8.RuneSelf:
			return d.slowString(start)
		case c < 0x20:
			return "", d.syntaxError("in string literal")
		}
		d.pos++
	}
	return "", d.syntaxError("")
}

// slowString decodes a string that has escapes or non-ASCII text; d.pos is
// at the first of them, start just after the opening quote.
func (d *decoder) slowString(start int) (string, error) {
	b := append(d.buf[:0], d.data[start:d.pos]...)
	for d.pos < len(d.data) {
		c := d.data[d.pos]
		switch {
		case c == '"':
			d.pos++
			d.buf = b
			return string(b), nil
		case c < 0x20:
			return "", d.syntaxError("in string literal")
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(d.data[d.pos:])
			if r == utf8.RuneError && size == 1 {
				b = utf8.AppendRune(b, utf8.RuneError)
			} else {
				b = append(b, d.data[d.pos:d.pos+size]...)
			}
			d.pos += size
		case c != '\\':
			b = append(b, c)
			d.pos++
		default:
			d.pos++
			if d.pos >= len(d.data) {
				return "", d.syntaxError("")
			}
			e := d.data[d.pos]
			d.pos++
			switch e {
			case '"', '\\', '/':
				b = append(b, e)
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				r, ok := d.hex4()
				if !ok {
					return "", d.syntaxError(`in \u hexadecimal character escape`)
				}
				if utf16.IsSurrogate(r) {
					r = d.lowSurrogate(r)
				}
				b = utf8.AppendRune(b, r)
			default:
				d.pos--
				return "", d.syntaxError("in string escape code")
			}
		}
	}
	return "", d.syntaxError("")
}

// hex4 reads the four hex digits of a \u escape.
func (d *decoder) hex4() (rune, bool) {
	if d.pos+4 > len(d.data) {
		d.pos = len(d.data)
		return 0, false
	}
	var r rune
	for i := 0; i < 4; i++ {
		c := d.data[d.pos]
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
		d.pos++
	}
	return r, true
}

// lowSurrogate completes a surrogate pair when a \u escape of the low half
// follows the high half r; a lone surrogate becomes U+FFFD, as in
// encoding/json.
func (d *decoder) lowSurrogate(r rune) rune {
	if d.pos+6 <= len(d.data) && d.data[d.pos] == '\\' && d.data[d.pos+1] == 'u' {
		save := d.pos
		d.pos += 2
		if r2, ok := d.hex4(); ok {
			if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
				return dec
			}
		}
		d.pos = save
	}
	return utf8.RuneError
}
