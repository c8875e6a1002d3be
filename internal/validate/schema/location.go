package schema

import (
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// step is one step from a JSON value into a member of it: an object member
// by name, or an array element by index.
type step struct {
	name  string
	index int // >= 0: an array element; -1: the object member name
}

func member(name string) step { return step{name: name, index: -1} }
func element(i int) step      { return step{index: i} }

// token is the step as a JSON pointer reference token (unescaped).
func (s step) token() string {
	if s.index >= 0 {
		return strconv.Itoa(s.index)
	}
	return s.name
}

// path is a location in the parameters, as steps from the top.
type path []step

// String writes the path as lockstep writes parameter paths: names joined
// by '.', array indexes and names that hold '.', '[' or ']' in brackets
// ("storage.class", "list[0].name", "labels[app.kubernetes.io/name]").
func (p path) String() string {
	var b strings.Builder
	for _, s := range p {
		switch {
		case s.index >= 0:
			b.WriteString("[" + strconv.Itoa(s.index) + "]")
		case !plainName(s.name):
			b.WriteString("[" + s.name + "]")
		default:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s.name)
		}
	}
	return b.String()
}

// fieldPath appends p to base.
func fieldPath(base *field.Path, p path) *field.Path {
	fp := base
	for _, s := range p {
		switch {
		case s.index >= 0:
			fp = fp.Index(s.index)
		case plainName(s.name):
			fp = fp.Child(s.name)
		default:
			fp = fp.Key(s.name)
		}
	}
	return fp
}

// plainName reports whether a member name reads unambiguously after a '.'.
func plainName(name string) bool {
	return name != "" && !strings.ContainsAny(name, ".[]")
}

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// pointer writes tokens as a JSON pointer for messages; "/" stands for the
// whole parameters object.
func pointer(tokens []string) string {
	if len(tokens) == 0 {
		return "/"
	}
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(pointerEscaper.Replace(t))
	}
	return b.String()
}

// tokens returns p as JSON pointer reference tokens.
func (p path) tokens() []string {
	out := make([]string, len(p))
	for i, s := range p {
		out[i] = s.token()
	}
	return out
}

// locate follows JSON pointer tokens from doc. It returns the path (telling
// array indexes from member names by what doc holds) and the value there;
// found is false when the value does not exist, and the path then ends
// with member names.
func locate(doc any, tokens []string) (p path, v any, found bool) {
	p = make(path, 0, len(tokens))
	v, found = doc, true
	for _, t := range tokens {
		if arr, ok := v.([]any); ok && found {
			if i, err := strconv.Atoi(t); err == nil && i >= 0 && strconv.Itoa(i) == t {
				p = append(p, element(i))
				if i < len(arr) {
					v = arr[i]
				} else {
					v, found = nil, false
				}
				continue
			}
		}
		p = append(p, member(t))
		obj, ok := v.(object)
		if !found || !ok {
			v, found = nil, false
			continue
		}
		v, found = obj[t]
	}
	return p, v, found
}
