package admission

import (
	"errors"
	"fmt"

	sigsjson "sigs.k8s.io/json"
)

// member is one member of a JSON object, as found by members.
type member struct {
	// Name is the member's name as written, without its quotes; Escaped
	// reports that it holds an escape (it is then not yet its value).
	Name    []byte
	Escaped bool
	// Value is the member's raw value.
	Value []byte
	// Start and End bound the whole member in the object's bytes, from the
	// quote that opens its name to the end of its value.
	Start, End int
}

// decodedName decodes the name of m, a member of the object in raw, for
// a name written with escapes.
func (m member) decodedName(raw []byte) (string, error) {
	var name string
	err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw[m.Start:m.Start+len(m.Name)+2], &name)
	return name, err
}

// members calls visit with each member of the JSON object in raw, in
// order, until visit returns false. It does not
// validate: the bytes it is given were validated when the AdmissionReview
// that carries them was decoded, and every value a check reads is decoded
// (and so validated again) on its own. It only finds where each member
// begins and ends, and reports bytes that are cut short or are not an
// object.
func members(raw []byte, visit func(m member) bool) error {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return errNotObject
	}
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return nil
	}
	for {
		if i >= len(raw) || raw[i] != '"' {
			return errCut
		}
		m := member{Start: i}
		end, escaped, err := skipString(raw, i)
		if err != nil {
			return err
		}
		m.Name, m.Escaped = raw[i+1:end-1], escaped
		i = skipSpace(raw, end)
		if i >= len(raw) || raw[i] != ':' {
			return errCut
		}
		start := skipSpace(raw, i+1)
		end, err = skipValue(raw, start)
		if err != nil {
			return err
		}
		m.Value, m.End = raw[start:end], end
		if !visit(m) {
			return nil
		}
		i = skipSpace(raw, end)
		if i >= len(raw) {
			return errCut
		}
		switch raw[i] {
		case ',':
			i = skipSpace(raw, i+1)
		case '}':
			return nil
		default:
			return fmt.Errorf("unexpected %q after an object member", raw[i])
		}
	}
}

var (
	errNotObject = errors.New("not a JSON object")
	errCut       = errors.New("unexpected end of JSON input")
)

// skipSpace returns the index of the first byte at or after i that is not
// JSON whitespace.
func skipSpace(raw []byte, i int) int {
	for i < len(raw) && isSpace(raw[i]) {
		i++
	}
	return i
}

// isSpace reports whether b is JSON whitespace.
func isSpace(b byte) bool {
	return b == ' ' || b == '\t' || b == '\n' || b == '\r'
}

// skipString returns the index just past the string that starts (with its
// quote) at i, and whether it holds an escape.
func skipString(raw []byte, i int) (int, bool, error) {
	escaped := false
	for j := i + 1; j < len(raw); j++ {
		switch raw[j] {
		case '\\':
			escaped = true
			j++
		case '"':
			return j + 1, escaped, nil
		}
	}
	return 0, false, errCut
}

// skipValue returns the index just past the value that starts at i.
func skipValue(raw []byte, i int) (int, error) {
	if i >= len(raw) {
		return 0, errCut
	}
	switch raw[i] {
	case '"':
		end, _, err := skipString(raw, i)
		return end, err
	case '{', '[':
		depth := 0
		for j := i; j < len(raw); j++ {
			switch raw[j] {
			case '"':
				end, _, err := skipString(raw, j)
				if err != nil {
					return 0, err
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, nil
				}
			}
		}
		return 0, errCut
	default:
		// A number, true, false or null: up to the next delimiter.
		j := i
		for j < len(raw) {
			switch raw[j] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				if j == i {
					return 0, fmt.Errorf("unexpected %q where a value belongs", raw[j])
				}
				return j, nil
			}
			j++
		}
		if j == i {
			return 0, errCut
		}
		return j, nil
	}
}
