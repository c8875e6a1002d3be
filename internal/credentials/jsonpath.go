package credentials

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"k8s.io/client-go/util/jsonpath"
)

// A JSON path finds one value in the broker's credentials, and is parsed,
// checked and run with its bounds:
//
//   - Its text is at most MaxJSONPathBytes.
//   - It may not range ({range}...{end}) or use a union ([a,b]): both find
//     several values, and the path must find one.
//   - It has at most MaxRecursiveDescents "..": each one more multiplies
//     the values visited.
//   - Steps: a path of fields and single indexes takes its length in
//     steps. One that visits many values (.., *, a filter, a slice)
//     takes, besides, valueWeight steps for every value of the
//     credentials, and one for every byte of their strings (.. and *
//     visit each): it is refused before it runs when that is more than
//     the steps left. The library then does at most a constant times that
//     much work per step of the path.
//   - Output: the value it finds is at most MaxValueBytes.

// pathProgram is a JSON path parsed and checked.
type pathProgram struct {
	jp *jsonpath.JSONPath
	// visits is set when the path visits many values.
	visits bool
	// length is the length of its text.
	length int
}

// compileJSONPath parses and checks a JSON path; it does not run it.
func compileJSONPath(expr string) (*pathProgram, error) {
	parser, err := jsonpath.Parse("value", expr)
	if err != nil {
		return nil, fmt.Errorf("not a JSONPath: %w", err)
	}
	p := &pathProgram{length: len(expr)}
	descents := 0
	var walk func(n jsonpath.Node) error
	walk = func(n jsonpath.Node) error {
		switch n := n.(type) {
		case *jsonpath.ListNode:
			for _, c := range n.Nodes {
				if err := walk(c); err != nil {
					return err
				}
			}
		case *jsonpath.IdentifierNode:
			return fmt.Errorf("it uses %q: a JSON path here finds one value, and may not range", n.Name)
		case *jsonpath.UnionNode:
			return errors.New("it uses a union ([a,b]), which finds several values: a JSON path here must find exactly one")
		case *jsonpath.RecursiveNode:
			descents++
			p.visits = true
			if descents > MaxRecursiveDescents {
				return fmt.Errorf("it descends recursively (..) %d times or more; a JSON path may do it at most %d time(s)", descents, MaxRecursiveDescents)
			}
		case *jsonpath.WildcardNode:
			p.visits = true
		case *jsonpath.ArrayNode:
			if !n.Params[1].Derived || n.Params[2].Known {
				p.visits = true // a slice, not one index
			}
		case *jsonpath.FilterNode:
			p.visits = true
			if err := walk(n.Left); err != nil {
				return err
			}
			return walk(n.Right)
		}
		return nil
	}
	if err := walk(parser.Root); err != nil {
		return nil, err
	}
	p.jp = jsonpath.New("value")
	if err := p.jp.Parse(expr); err != nil {
		return nil, fmt.Errorf("not a JSONPath: %w", err)
	}
	return p, nil
}

// find runs the path over creds within b: the values it finds.
func (p *pathProgram) find(b *budget, creds map[string]any) ([]any, error) {
	steps := p.length
	if p.visits {
		steps = add(steps, visitSteps(creds))
	}
	if err := b.step(steps); err != nil {
		return nil, err
	}
	results, err := p.jp.FindResults(creds)
	if err != nil {
		return nil, nil // finds nothing: the caller says so
	}
	var found []any
	for _, r := range results {
		for _, v := range r {
			found = append(found, v.Interface())
		}
	}
	return found, nil
}

// valueWeight is what visiting one value of the credentials takes, in
// steps; a byte of a string takes one (.. and * step into strings byte by
// byte, at less cost).
const valueWeight = 8

// visitSteps is what a path that visits every value in v takes.
func visitSteps(v any) int {
	switch v := v.(type) {
	case map[string]any:
		n := valueWeight
		for _, e := range v {
			n = add(n, visitSteps(e))
		}
		return n
	case []any:
		n := valueWeight
		for _, e := range v {
			n = add(n, visitSteps(e))
		}
		return n
	case string:
		return valueWeight + len(v)
	}
	return valueWeight
}

// valueOf is the text a found value is stored as: a string as it is,
// anything else as JSON; at most MaxValueBytes.
func valueOf(b *budget, v any) ([]byte, error) {
	if s, ok := v.(string); ok {
		if len(s) > MaxValueBytes {
			return nil, b.fail(outputExceeded())
		}
		return []byte(s), nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("the value it finds is not JSON: %s", reflect.TypeOf(v))
	}
	if len(raw) > MaxValueBytes {
		return nil, b.fail(outputExceeded())
	}
	return raw, nil
}
