package validate

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/lockstep-dev/lockstep/internal/jsonnum"
)

// Policy is the compiled field policy of one struct type: which fields are
// create-only or read-only, and how to reach them. It is immutable and safe
// for concurrent use. Get one from Compile or For.
type Policy struct {
	t     reflect.Type // the struct type
	ptr   reflect.Type // pointer to it
	root  *walker      // nil when the type has no rules
	rules []Rule
}

// Type returns the struct type the policy checks.
func (p *Policy) Type() reflect.Type { return p.t }

// Rules lists the policy's rules in field order, as JSON path templates
// ("[*]" for any index or key). Rules of a recursive type are listed once.
func (p *Policy) Rules() []Rule { return slices.Clone(p.rules) }

// ValidateCreate checks an object being created: read-only fields must be
// absent. obj is a struct of the policy's type or a pointer to one (nil: an
// empty object).
func (p *Policy) ValidateCreate(obj any) field.ErrorList {
	v, err := p.value(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	return p.run(reflect.Value{}, v, true)
}

// ValidateUpdate checks an update from old to new: create-only fields must
// not be set, removed or changed, read-only fields must not change. Both are
// structs of the policy's type or pointers to one (nil: an empty object).
// Every violation is reported, in field order with map keys sorted. Checking
// an unchanged object passed by pointer does not allocate.
func (p *Policy) ValidateUpdate(old, new any) field.ErrorList {
	ov, err := p.value(old)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	nv, err := p.value(new)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	return p.run(ov, nv, false)
}

// value turns a checked object into the struct Value (invalid: absent).
func (p *Policy) value(obj any) (reflect.Value, error) {
	v := reflect.ValueOf(obj)
	if !v.IsValid() {
		return v, nil
	}
	switch v.Type() {
	case p.t:
		return v, nil
	case p.ptr:
		if v.IsNil() {
			return reflect.Value{}, nil
		}
		return v.Elem(), nil
	}
	return reflect.Value{}, fmt.Errorf("validate: the field policy of %s cannot check a %T", p.t, obj)
}

// run walks the rules with a pooled checker and returns its findings.
func (p *Policy) run(old, new reflect.Value, create bool) (errs field.ErrorList) {
	if p.root == nil {
		return nil
	}
	c := getChecker()
	defer func() {
		if r := recover(); r != nil {
			// A bug in this package, not in the object: say so, and drop
			// the checker, whose state is unknown.
			errs = append(c.errs, field.InternalError(nil, fmt.Errorf(
				"validate: checking the field policy of %s failed: %v; this is a bug in lockstep, please report it", p.t, r)))
			return
		}
		putChecker(c)
	}()
	c.walk(p.root, old, new, create, 0)
	errs, c.errs = c.errs, nil
	return errs
}

// RuleFor reports the rule that governs a concrete field path such as
// "spec.items[2].id" or "spec.labels[team]", as error paths name them.
func (p *Policy) RuleFor(path string) (Kind, bool) {
	if p.root == nil {
		return 0, false
	}
	return matchRule(p.root, path, true)
}

func matchRule(w *walker, s string, atRoot bool) (Kind, bool) {
	if w == nil {
		return 0, false
	}
	switch w.kind {
	case walkPtr:
		return matchRule(w.elem, s, atRoot)
	case walkSeq:
		rest, ok := strings.CutPrefix(s, "[")
		if !ok {
			return 0, false
		}
		digits, rest := jsonnum.LeadingDigits(rest)
		if digits == "" || !strings.HasPrefix(rest, "]") {
			return 0, false
		}
		return matchRule(w.elem, rest[1:], false)
	case walkMap:
		if !strings.HasPrefix(s, "[") {
			return 0, false
		}
		// Keys may hold "]" themselves: try every closing bracket.
		for i := 1; i < len(s); i++ {
			if s[i] == ']' {
				if k, ok := matchRule(w.elem, s[i+1:], false); ok {
					return k, true
				}
			}
		}
		return 0, false
	}
	rest := s
	if !atRoot {
		var ok bool
		if rest, ok = strings.CutPrefix(s, "."); !ok {
			return 0, false
		}
	}
	for _, f := range w.fields {
		after, ok := strings.CutPrefix(rest, f.name)
		if !ok {
			continue
		}
		if after == "" {
			if f.kind != 0 {
				return f.kind, true
			}
			continue
		}
		if f.sub != nil && (after[0] == '.' || after[0] == '[') {
			if k, ok := matchRule(f.sub, after, false); ok {
				return k, true
			}
		}
	}
	return 0, false
}

// ValidateCreate checks obj, a value of a struct type or pointer to struct
// type T, against the policy of T (see Policy.ValidateCreate). A type whose
// tags do not compile yields one internal error.
func ValidateCreate[T any](obj T) field.ErrorList {
	p, err := For[T]()
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	return p.ValidateCreate(obj)
}

// ValidateUpdate checks an update of a T against the policy of T (see
// Policy.ValidateUpdate). Pass pointers to avoid copying the objects.
func ValidateUpdate[T any](old, new T) field.ErrorList {
	p, err := For[T]()
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	return p.ValidateUpdate(old, new)
}
