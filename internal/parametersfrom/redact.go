package parametersfrom

import (
	"encoding/json"
	"slices"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// hidden replaces a Secret's value in a message.
const hidden = "(value from a Secret, not shown)"

// Redact rewrites the field errors of a check of the merged parameters
// (path is spec.parameters) so that no value that came from a Secret is
// shown: an error about a parameter from a Secret loses its value and
// names the Secret and key; every detail is cleared of the Secrets'
// values.
func (r Resolved) Redact(errs field.ErrorList, path *field.Path) field.ErrorList {
	if !r.FromSecrets() || len(errs) == 0 {
		return errs
	}
	scrub := r.scrubber()
	out := make(field.ErrorList, 0, len(errs))
	for _, e := range errs {
		c := *e
		c.Detail = scrub(c.Detail)
		if where, ok := r.sourceOf(c.Field, path); ok {
			c.BadValue = field.OmitValueType{}
			c.Detail += " (the parameter comes from " + where + ")"
		} else if s, isString := c.BadValue.(string); isString {
			c.BadValue = scrub(s)
		}
		out = append(out, &c)
	}
	return out
}

// sourceOf returns the source of the top-level parameter a field path
// (spec.parameters.x..., spec.parameters[x]...) is under.
func (r Resolved) sourceOf(fieldPath string, path *field.Path) (string, bool) {
	base := path.String()
	rest, ok := strings.CutPrefix(fieldPath, base)
	if !ok {
		return "", false
	}
	for name, where := range r.Sources {
		for _, prefix := range []string{"." + name, "[" + name + "]", "[" + strconvQuote(name) + "]"} {
			if after, ok := strings.CutPrefix(rest, prefix); ok && (after == "" || after[0] == '.' || after[0] == '[') {
				return where, true
			}
		}
	}
	return "", false
}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// scrubber returns a function that replaces every value from a Secret in
// a text: strings (quoted or not), and the JSON of numbers, booleans,
// objects and arrays where they stand as a token of their own. It costs
// time in proportion to the values once, and to each text it scrubs
// (a Secret's values are user input, as large as the parameters may be).
func (r Resolved) scrubber() func(string) string {
	var literal []string
	tokens := map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			if v != "" {
				literal = append(literal, strconvQuote(v), v)
			}
		case map[string]any:
			if raw, err := encode(v); err == nil {
				literal = append(literal, string(raw))
			}
			for _, e := range v {
				walk(e)
			}
		case []any:
			if raw, err := encode(v); err == nil {
				literal = append(literal, string(raw))
			}
			for _, e := range v {
				walk(e)
			}
		case json.Number:
			tokens[string(v)] = true
		case bool:
			tokens[strconv.FormatBool(v)] = true
		}
	}
	for _, v := range r.values {
		walk(v)
	}
	// Longest first, so that a value inside another is not replaced
	// first: the replacer tries them in this order at each position.
	sort.SliceStable(literal, func(i, j int) bool { return len(literal[i]) > len(literal[j]) })
	pairs := make([]string, 0, 2*len(literal))
	for _, l := range literal {
		pairs = append(pairs, l, hidden)
	}
	replacer := strings.NewReplacer(pairs...)
	lengths := make([]int, 0, len(tokens))
	for t := range tokens {
		lengths = append(lengths, len(t))
	}
	slices.Sort(lengths)
	lengths = slices.Compact(lengths)
	slices.Reverse(lengths)
	return func(s string) string {
		if len(pairs) > 0 {
			s = replacer.Replace(s)
		}
		return replaceTokens(s, tokens, lengths)
	}
}

// replaceTokens replaces in s each of tokens (whose lengths, longest
// first, are lengths) that stands as a token of its own: neither the byte
// before it nor the byte after it is a letter, a digit, '_' or '.'.
func replaceTokens(s string, tokens map[string]bool, lengths []int) string {
	if len(tokens) == 0 {
		return s
	}
	var out strings.Builder
	for i := 0; i < len(s); {
		if i == 0 || !tokenByte(s[i-1]) {
			if n := tokenAt(s, i, tokens, lengths); n > 0 {
				out.WriteString(hidden)
				i += n
				continue
			}
		}
		out.WriteByte(s[i])
		i++
	}
	return out.String()
}

// tokenAt is the length of the longest of tokens at s[i:] that ends a
// token, or 0.
func tokenAt(s string, i int, tokens map[string]bool, lengths []int) int {
	for _, n := range lengths {
		end := i + n
		if end <= len(s) && tokens[s[i:end]] && (end == len(s) || !tokenByte(s[end])) {
			return n
		}
	}
	return 0
}

// tokenByte reports whether b continues a token: a letter, a digit, '_'
// or '.'.
func tokenByte(b byte) bool {
	return b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b == '_' || b == '.'
}
