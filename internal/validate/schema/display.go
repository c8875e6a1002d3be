package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"unicode/utf8"
)

// maxShown is about how many bytes of a value an error shows.
const maxShown = 120

// shownValue is a decoded JSON value as a field.Error shows it: compact
// JSON (object keys sorted), cut after about maxShown bytes. It is a
// json.RawMessage where that shows the same text, so that the value stays
// JSON for whoever marshals the error; field.Error would write '<', '>'
// and '&' in one as \u003c, \u003e and \u0026.
func shownValue(v any) any {
	b, complete := appendJSON(make([]byte, 0, 32), v, 0)
	if complete && len(b) <= maxShown && !bytes.ContainsAny(b, "<>&") {
		return json.RawMessage(b)
	}
	return textValue(b)
}

// compactJSON is a decoded value as compact JSON for messages, cut after
// about maxShown bytes.
func compactJSON(v any) string {
	switch s := shownValue(v).(type) {
	case json.RawMessage:
		return string(s)
	case shownText:
		return s.String()
	}
	return ""
}

// shownText is text shown as a field.Error value as it is, without quotes:
// JSON cut short, or input that is not JSON at all. field.Error prints a
// value as JSON when it can and else through String, so MarshalJSON fails
// on purpose: shownText is not JSON.
type shownText string

var errNotJSON = errors.New("shown text is not JSON")

func (t shownText) String() string { return string(t) }

// MarshalJSON refuses: the text is not JSON (see shownText).
func (t shownText) MarshalJSON() ([]byte, error) { return nil, errNotJSON }

// textValue shows text (cut after about maxShown bytes) as a field.Error
// value.
func textValue[T ~string | ~[]byte](text T) shownText {
	if len(text) > maxShown+utf8.UTFMax {
		text = text[:maxShown+utf8.UTFMax] // enough to cut from, without copying all
	}
	return shownText(cut(string(text), maxShown))
}

// cut shortens s to at most n bytes, at a character boundary, and marks
// the cut with "...".
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}

// appendJSON appends v as compact JSON with sorted keys, stopping once b
// holds more than maxShown bytes; complete is false when it stopped. depth
// bounds the recursion for values nested deeper than any shown value can.
func appendJSON(b []byte, v any, depth int) (out []byte, complete bool) {
	if len(b) > maxShown || depth > maxShown {
		return b, false
	}
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), true
	case bool:
		return strconv.AppendBool(b, v), true
	case json.Number:
		return append(b, v...), true
	case string:
		return appendString(b, v), true
	case []any:
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			if b, complete = appendJSON(b, e, depth+1); !complete {
				return b, false
			}
		}
		return append(b, ']'), true
	case object:
		b = append(b, '{')
		for i, k := range sortedKeys(v) {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			if b, complete = appendJSON(b, v[k], depth+1); !complete {
				return b, false
			}
		}
		return append(b, '}'), true
	}
	// Decoded JSON holds nothing else; show what it is rather than fail.
	j, err := json.Marshal(v)
	if err != nil {
		return append(b, "?"...), false
	}
	return append(b, j...), true
}

// appendString appends s as a JSON string, leaving non-ASCII as it is.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				b = append(b, `\ufffd`...)
			} else {
				b = append(b, s[i:i+size]...)
			}
			i += size
			continue
		}
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c == '\t':
			b = append(b, '\\', 't')
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
		i++
	}
	return append(b, '"')
}

// sortedKeys returns an object's keys in order.
func sortedKeys(o object) []string {
	keys := make([]string, 0, len(o))
	for k := range o {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
