package parametersfrom

import (
	"encoding/json"
	"regexp"
	"sort"
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
// objects and arrays where they stand as a token of their own.
func (r Resolved) scrubber() func(string) string {
	var literal, token []string
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
			token = append(token, string(v))
		case bool:
			if v {
				token = append(token, "true")
			} else {
				token = append(token, "false")
			}
		}
	}
	for _, v := range r.values {
		walk(v)
	}
	// Longest first, so that a value inside another is not replaced first.
	sort.Slice(literal, func(i, j int) bool { return len(literal[i]) > len(literal[j]) })
	var tokens []*regexp.Regexp
	for _, t := range token {
		tokens = append(tokens, regexp.MustCompile(`(^|[^0-9A-Za-z_.])`+regexp.QuoteMeta(t)+`($|[^0-9A-Za-z_.])`))
	}
	return func(s string) string {
		for _, l := range literal {
			s = strings.ReplaceAll(s, l, hidden)
		}
		for _, re := range tokens {
			s = re.ReplaceAllString(s, "${1}"+hidden+"${2}")
		}
		return s
	}
}
