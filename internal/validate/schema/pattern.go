package schema

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Bounds on the patterns that lockstep compiles while it checks
// parameters: the value of a parameter whose schema says "format":
// "regex" is a regular expression the requester wrote, and compiling one
// takes time that grows with its repetitions and its character classes,
// not only with its length ([a-z]{1000} repeated over a kilobyte takes a
// quarter of a second). A pattern longer than maxPatternBytes, or whose
// size is more than maxPatternSize, is refused as not a valid "regex";
// so are the patterns of one check beyond maxPatternsSize together. A
// pattern's size counts each node once and a repetition's body as often
// as it repeats, and a character class by its ranges (a class like \pL
// holds hundreds). Unicode classes (\pL, \PN, \p{Greek}) cost even the
// parser a fraction of a millisecond each: a pattern may name at most
// maxUnicodeClasses, the patterns of one check maxPatternsClasses
// together, counted in the text before it is parsed. Matching a compiled
// pattern is linear in the text (Go's regexp), and the text is bounded
// with the parameters.
const (
	maxPatternBytes    = 1000
	maxPatternSize     = 2000
	maxPatternsSize    = 4000
	maxUnicodeClasses  = 8
	maxPatternsClasses = 16
	// classRanges is how many ranges of a character class count as one
	// node.
	classRanges = 32
)

// patternEngine compiles the regular expressions of one schema: the
// schema's own patterns (the broker's, trusted) as Go's regexp does, and,
// once the schema is compiled, the patterns that parameters hold within
// the bounds above. A check of parameters against a schema that has
// "format": "regex" holds mu, and spent counts the size of the patterns
// it compiled.
type patternEngine struct {
	compiled       atomic.Bool
	mu             sync.Mutex
	spent, classes int
}

func (e *patternEngine) compile(s string) (jsonschema.Regexp, error) {
	if e.compiled.Load() {
		classes := unicodeClasses(s)
		if classes <= maxUnicodeClasses {
			if e.classes += classes; e.classes > maxPatternsClasses {
				return nil, fmt.Errorf("the patterns of these parameters name more than %d Unicode classes (\\p) together; lockstep compiles at most that many for one check", maxPatternsClasses)
			}
		}
		size, err := checkPattern(s, classes)
		if err != nil {
			return nil, err
		}
		if e.spent = satAdd(e.spent, size); e.spent > maxPatternsSize {
			return nil, fmt.Errorf("the patterns of these parameters have a size of more than %d together; lockstep compiles at most that much for one check", maxPatternsSize)
		}
	}
	return regexp.Compile(s)
}

// checkPattern refuses a pattern beyond the bounds (classes is how many
// Unicode classes it names), and returns its size.
func checkPattern(s string, classes int) (int, error) {
	if len(s) > maxPatternBytes {
		return 0, fmt.Errorf("the pattern is %d bytes long; lockstep compiles patterns of at most %d bytes", len(s), maxPatternBytes)
	}
	if classes > maxUnicodeClasses {
		return 0, fmt.Errorf("the pattern names %d Unicode classes (\\p); lockstep compiles patterns that name at most %d", classes, maxUnicodeClasses)
	}
	re, err := syntax.Parse(s, syntax.Perl)
	if err != nil {
		return 0, err
	}
	n := patternSize(re)
	if n > maxPatternSize {
		return 0, fmt.Errorf("the pattern has a size of %s (each repetition counts its body as often as it repeats); lockstep compiles patterns of a size of at most %d",
			sizeText(n), maxPatternSize)
	}
	return n, nil
}

// unicodeClasses counts the Unicode classes a pattern may name: every \p
// and \P in its text (an escaped backslash before a p counts too: the
// count may be high, never low).
func unicodeClasses(s string) int {
	return strings.Count(s, `\p`) + strings.Count(s, `\P`)
}

// usesRegexFormat reports whether a schema document has "format":
// "regex" anywhere.
func usesRegexFormat(doc any) bool {
	switch v := doc.(type) {
	case map[string]any:
		if f, ok := v["format"].(string); ok && f == "regex" {
			return true
		}
		for _, e := range v {
			if usesRegexFormat(e) {
				return true
			}
		}
	case []any:
		for _, e := range v {
			if usesRegexFormat(e) {
				return true
			}
		}
	}
	return false
}

// patternSize is the size of a parsed pattern, saturating beyond the
// bound.
func patternSize(re *syntax.Regexp) int {
	n := 1
	switch re.Op {
	case syntax.OpRepeat:
		times := re.Max
		if times < 0 {
			times = re.Min + 1
		}
		return satAdd(n, satMul(max(times, 1), patternSize(re.Sub[0])))
	case syntax.OpCharClass:
		return n + len(re.Rune)/2/classRanges
	case syntax.OpLiteral:
		return n + len(re.Rune)
	}
	for _, sub := range re.Sub {
		n = satAdd(n, patternSize(sub))
	}
	return n
}

// patternSaturated is where pattern sizes stop growing.
const patternSaturated = 1 << 30

func satAdd(a, b int) int { return min(a+b, patternSaturated) }

func satMul(a, b int) int {
	if a != 0 && b > patternSaturated/a {
		return patternSaturated
	}
	return min(a*b, patternSaturated)
}

func sizeText(n int) string {
	if n >= patternSaturated {
		return fmt.Sprintf("more than %d", patternSaturated)
	}
	return fmt.Sprint(n)
}
