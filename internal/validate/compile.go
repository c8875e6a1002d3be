package validate

import (
	"errors"
	"fmt"
	"reflect"
	"sync"
)

// walkKind says how a walker reaches the rules below a value.
type walkKind uint8

const (
	walkStruct walkKind = iota // into the fields
	walkPtr                    // through a pointer
	walkSeq                    // into slice or array elements, by index
	walkMap                    // into map values, by key
)

// walker is the compiled policy of one Go type: the way from a value of that
// type to the tagged fields below it. Walkers form a graph, cyclic for
// recursive types, that only leads to values holding rules.
type walker struct {
	kind     walkKind
	t        reflect.Type
	fields   []walkField // walkStruct
	elem     *walker     // walkPtr, walkSeq, walkMap
	mi       *mapInfo    // walkMap
	array    bool        // walkSeq over an array: elements always exist
	hasRules bool
}

// walkField is one field of a struct walker: a rule (kind != 0), a way to
// rules further down (sub), or both.
type walkField struct {
	name  string  // JSON name
	index []int   // Go field indexes through embedded structs
	kind  Kind    // the field's own rule; 0 for none
	eq    *eqInfo // how to compare the field, when it has a rule
	// sub leads to rules inside the field's value. For an untagged field
	// they apply as usual. For a create-only field they are the read-only
	// rules nested in it, which only matter when the field is created: on
	// update the create-only rule already covers its whole value.
	sub *walker
}

// scope is what a tag on an enclosing field already says about a type.
type scope uint8

const (
	scopeFree       scope = iota // no enclosing tag: every tag counts
	scopeCreateOnly              // inside a create-only field: read-only tags count on create
	scopeReadOnly                // inside a read-only field: tags are only checked for typos
)

type walkKey struct {
	t reflect.Type
	s scope
}

// compiled is one entry of the policy cache.
type compiled struct {
	p   *Policy
	err error
}

// policies caches compiled policies by type (struct or pointer to struct).
var policies sync.Map // reflect.Type -> *compiled

// Compile turns the lockstep tags of a struct type (or pointer to struct
// type) into a Policy. Results, errors included, are cached per type, so
// calling Compile again is a map lookup. It returns an error naming every
// invalid tag; it never panics.
func Compile(t reflect.Type) (*Policy, error) {
	if t == nil {
		return nil, errors.New("validate: cannot compile a field policy for a nil type")
	}
	if c, ok := policies.Load(t); ok {
		return c.(*compiled).p, c.(*compiled).err
	}
	compileMu.Lock()
	defer compileMu.Unlock()
	return compileLocked(t)
}

// For returns the compiled policy of T (a struct or pointer to struct type).
func For[T any]() (*Policy, error) {
	return Compile(reflect.TypeFor[T]())
}

func compileLocked(t reflect.Type) (*Policy, error) {
	if c, ok := policies.Load(t); ok {
		return c.(*compiled).p, c.(*compiled).err
	}
	var c compiled
	switch {
	case t.Kind() == reflect.Struct:
		c.p, c.err = newCompiler(t).compile()
	case t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct:
		c.p, c.err = compileLocked(t.Elem())
	default:
		c.err = fmt.Errorf("validate: cannot compile a field policy for %s: it is not a struct or a pointer to a struct", t)
	}
	policies.Store(t, &c)
	return c.p, c.err
}

// compiler builds the walker graph of one root type.
type compiler struct {
	root    reflect.Type
	walkers map[walkKey]*walker
	order   []*walker // every walker built, for the fixpoint in prune
	checked map[reflect.Type]bool
	errs    []error
}

func newCompiler(root reflect.Type) *compiler {
	return &compiler{root: root, walkers: map[walkKey]*walker{}, checked: map[reflect.Type]bool{}}
}

func (c *compiler) compile() (*Policy, error) {
	root := c.walkerFor(c.root, scopeFree)
	c.prune()
	if len(c.errs) > 0 {
		return nil, fmt.Errorf("validate: invalid field policy tags in %s: %w", c.root, errors.Join(c.errs...))
	}
	p := &Policy{t: c.root, ptr: reflect.PointerTo(c.root)}
	if root != nil && root.hasRules { // nil: the root type has its own JSON form
		p.root = root
		flatten(root, "", map[*walker]bool{}, &p.rules)
	}
	return p, nil
}

// walkerFor returns the walker of type t in scope s, or nil when values of t
// cannot hold tagged fields (scalars, raw JSON, types with an Equal method
// or their own JSON form).
func (c *compiler) walkerFor(t reflect.Type, s scope) *walker {
	key := walkKey{t, s}
	if w, ok := c.walkers[key]; ok {
		return w
	}
	var w *walker
	switch e := eqInfoLocked(t); e.class {
	case eqPtr:
		w = c.add(key, &walker{kind: walkPtr, t: t})
		w.elem = c.walkerFor(t.Elem(), s)
	case eqSlice, eqArray:
		w = c.add(key, &walker{kind: walkSeq, t: t, array: e.class == eqArray})
		w.elem = c.walkerFor(t.Elem(), s)
	case eqMap:
		w = c.add(key, &walker{kind: walkMap, t: t, mi: e.m})
		w.elem = c.walkerFor(t.Elem(), s)
	case eqStruct:
		w = c.add(key, &walker{kind: walkStruct, t: t})
		c.checkTags(t)
		for _, f := range jsonFields(t) {
			if wf, ok := c.field(f, s); ok {
				w.fields = append(w.fields, wf)
			}
		}
	default:
		return nil
	}
	return w
}

func (c *compiler) add(key walkKey, w *walker) *walker {
	c.walkers[key] = w
	c.order = append(c.order, w)
	return w
}

// field compiles one JSON-visible struct field met in scope s.
func (c *compiler) field(f jsonField, s scope) (walkField, bool) {
	kind, _ := policyTag(f.sf) // a bad tag was reported by checkTags
	t := f.sf.Type
	wf := walkField{name: f.name, index: f.index}
	switch {
	case s == scopeReadOnly:
		c.walkerFor(t, scopeReadOnly) // only to check the tags below
		return wf, false
	case kind == ReadOnly:
		wf.kind, wf.eq = ReadOnly, eqInfoLocked(t)
		c.walkerFor(t, scopeReadOnly)
	case kind == CreateOnly && s == scopeFree:
		wf.kind, wf.eq = CreateOnly, eqInfoLocked(t)
		wf.sub = c.walkerFor(t, scopeCreateOnly)
	default: // untagged, or create-only inside create-only
		wf.sub = c.walkerFor(t, s)
	}
	return wf, true
}

// checkTags reports invalid lockstep tags on the fields of struct type t,
// including fields of embedded structs, and tags on fields that JSON never
// shows (where a policy could never be checked).
func (c *compiler) checkTags(t reflect.Type) {
	if c.checked[t] {
		return
	}
	c.checked[t] = true
	for i := range t.NumField() {
		sf := t.Field(i)
		kind, err := policyTag(sf)
		if err != nil {
			c.errs = append(c.errs, fmt.Errorf("field %s.%s: %w", t, sf.Name, err))
			continue
		}
		st, promoted := promotes(sf)
		if kind == 0 {
			if promoted && visible(sf) {
				c.checkTags(st)
			}
			continue
		}
		var why string
		_, ignored, _ := jsonTag(sf)
		switch {
		case ignored:
			why = `JSON ignores it (json:"-")`
		case !visible(sf):
			why = "it is unexported, so JSON ignores it"
		case promoted:
			why = "its fields are promoted into the parent object; tag those fields, or give the embedded field a JSON name"
		case !jsonable(sf.Type):
			why = fmt.Sprintf("its type %s has no JSON form", sf.Type)
		default:
			continue
		}
		c.errs = append(c.errs, fmt.Errorf("field %s.%s: a %s tag cannot apply here: %s", t, sf.Name, TagKey, why))
	}
}

// jsonable reports whether values of t can appear in JSON at all.
func jsonable(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Chan, reflect.Func, reflect.UnsafePointer, reflect.Complex64, reflect.Complex128:
		return false
	}
	return true
}

// prune computes which walkers lead to rules and drops the ways that lead
// nowhere, so that checks only visit values that hold rules. It also reports
// maps with rules below them whose keys have no order.
func (c *compiler) prune() {
	for changed := true; changed; {
		changed = false
		for _, w := range c.order {
			if h := w.leadsToRules(); h != w.hasRules {
				w.hasRules, changed = h, true
			}
		}
	}
	for _, w := range c.order {
		if w.kind != walkStruct {
			if w.elem != nil && !w.elem.hasRules {
				w.elem = nil
			}
			if w.kind == walkMap && w.hasRules && w.mi.order == keyOther {
				c.errs = append(c.errs, fmt.Errorf("map type %s holds tagged fields but its key type has no order: use string or integer keys", w.t))
			}
			continue
		}
		kept := w.fields[:0]
		for _, f := range w.fields {
			if f.sub != nil && !f.sub.hasRules {
				f.sub = nil
			}
			if f.kind != 0 || f.sub != nil {
				kept = append(kept, f)
			}
		}
		w.fields = kept
	}
}

func (w *walker) leadsToRules() bool {
	if w.kind != walkStruct {
		return w.elem != nil && w.elem.hasRules
	}
	for _, f := range w.fields {
		if f.kind != 0 || (f.sub != nil && f.sub.hasRules) {
			return true
		}
	}
	return false
}

// flatten lists the rules below w as path templates. A recursive type's
// rules are listed once, at the first level they occur.
func flatten(w *walker, path string, onPath map[*walker]bool, out *[]Rule) {
	if w == nil || onPath[w] {
		return
	}
	onPath[w] = true
	defer delete(onPath, w)
	switch w.kind {
	case walkPtr:
		flatten(w.elem, path, onPath, out)
	case walkSeq, walkMap:
		flatten(w.elem, path+"[*]", onPath, out)
	case walkStruct:
		for _, f := range w.fields {
			fp := joinPath(path, f.name)
			if f.kind != 0 {
				*out = append(*out, Rule{Path: fp, Kind: f.kind})
			}
			flatten(f.sub, fp, onPath, out)
		}
	}
}

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}
