package validate

import (
	"fmt"
	"reflect"
	"sync"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// checker carries the state of one check: the errors found so far, the
// field path being visited (kept as plain elements and turned into a
// field.Path only for an error) and reusable map scratch. Checkers are
// pooled so that checking an unchanged object does not allocate.
type checker struct {
	errs    field.ErrorList
	path    []pathElem
	scratch map[*mapInfo][]*mapScratch
	tooDeep bool // the walk gave up: the value is nested too deeply
}

// pathElem is one step of the field path being visited.
type pathElem struct {
	name  string        // a field's JSON name, or "" for an index or key
	index int           // slice or array index
	key   reflect.Value // map key, when valid
}

// checkers is the pool of idle checkers. It is a plain free list rather than
// a sync.Pool, which may drop entries at any time (and does on purpose
// under the race detector).
var checkers struct {
	sync.Mutex
	free []*checker
}

const maxIdleCheckers = 64

func getChecker() *checker {
	checkers.Lock()
	defer checkers.Unlock()
	if n := len(checkers.free); n > 0 {
		c := checkers.free[n-1]
		checkers.free = checkers.free[:n-1]
		return c
	}
	return &checker{scratch: map[*mapInfo][]*mapScratch{}}
}

func putChecker(c *checker) {
	clear(c.path[:cap(c.path)]) // keep no map keys alive
	c.path = c.path[:0]
	c.errs, c.tooDeep = nil, false
	checkers.Lock()
	defer checkers.Unlock()
	if len(checkers.free) < maxIdleCheckers {
		checkers.free = append(checkers.free, c)
	}
}

// maxWalkDepth bounds how deep a check walks into nested values (each
// pointer, element and field is a level). It is lower than maxDepth because
// every level may add an error whose path is as long as the nesting.
const maxWalkDepth = 1000

var errTooDeep = fmt.Errorf("the object is nested more than %d levels deep below this field, too deep to check its field policies", maxWalkDepth)

// walk checks the rules below w. In update mode old is the value before the
// update; in create mode (create is true) the value is new and old is
// ignored. Either value may be the invalid Value, which stands for absent.
func (c *checker) walk(w *walker, old, new reflect.Value, create bool, depth int) {
	if !new.IsValid() && (create || !old.IsValid()) {
		return // nothing on either side: every rule holds
	}
	if !create && old.IsValid() && w.kind != walkStruct && sameMemory(old, new) {
		return // one and the same value on both sides: nothing changed
	}
	if depth > maxWalkDepth || c.tooDeep {
		if !c.tooDeep {
			// Say it once, naming only the top-level field: the full
			// path is as long as the nesting.
			c.tooDeep = true
			c.errs = append(c.errs, field.InternalError(pathOf(c.path[:min(len(c.path), 1)]), errTooDeep))
		}
		return
	}
	switch w.kind {
	case walkPtr:
		c.walk(w.elem, deref(old), deref(new), create, depth+1)
	case walkStruct:
		for i := range w.fields {
			f := &w.fields[i]
			o, n := fieldOf(old, f.index), fieldOf(new, f.index)
			c.path = append(c.path, pathElem{name: f.name})
			if f.kind != 0 {
				c.check(f, o, n, create)
			}
			if f.sub != nil && (f.kind == 0 || create) {
				c.walk(f.sub, o, n, create, depth+1)
			}
			c.path = c.path[:len(c.path)-1]
		}
	case walkSeq:
		c.walkSeq(w, old, new, create, depth)
	case walkMap:
		c.walkMap(w, old, new, create, depth)
	}
}

// walkSeq pairs slice elements by index. An element only in new is created;
// one only in old was removed, which needs no check. Array elements always
// exist on both sides.
func (c *checker) walkSeq(w *walker, old, new reflect.Value, create bool, depth int) {
	n := lenOf(new)
	o := 0
	if !create {
		o = lenOf(old)
	}
	for i := range n {
		c.path = append(c.path, pathElem{index: i})
		switch {
		case i < o:
			c.walk(w.elem, old.Index(i), new.Index(i), false, depth+1)
		case w.array && !create:
			c.walk(w.elem, reflect.Value{}, new.Index(i), false, depth+1)
		default:
			c.walk(w.elem, reflect.Value{}, new.Index(i), true, depth+1)
		}
		c.path = c.path[:len(c.path)-1]
	}
}

// walkMap pairs map values by key, in key order. A key only in new is
// created; one only in old was removed, which needs no check.
func (c *checker) walkMap(w *walker, old, new reflect.Value, create bool, depth int) {
	if lenOf(new) == 0 {
		return
	}
	s := c.acquire(w.mi)
	defer c.release(w.mi, s)
	os, ns := &s.side[0], &s.side[1]
	ns.load(w.mi, new)
	if !create {
		os.load(w.mi, old)
	}
	i := 0
	for j := range ns.n {
		k := ns.key(j)
		for i < os.n && compareKeys(w.mi.order, os.key(i), k) < 0 {
			i++
		}
		c.path = append(c.path, pathElem{key: k})
		if i < os.n && compareKeys(w.mi.order, os.key(i), k) == 0 {
			c.walk(w.elem, os.val(i), ns.val(j), false, depth+1)
			i++
		} else {
			c.walk(w.elem, reflect.Value{}, ns.val(j), true, depth+1)
		}
		c.path = c.path[:len(c.path)-1]
	}
}

// check applies a field's own rule to its old and new value.
func (c *checker) check(f *walkField, old, new reflect.Value, create bool) {
	if create {
		if f.kind == ReadOnly && new.IsValid() && !c.zero(f.eq, new, 0) {
			c.errs = append(c.errs, readOnlyOnCreate(c.fieldPath(), f.eq, new))
		}
		return
	}
	if c.equalOrAbsent(f.eq, old, new, 0) {
		return
	}
	oldAbsent := !old.IsValid() || c.zero(f.eq, old, 0)
	newAbsent := !new.IsValid() || c.zero(f.eq, new, 0)
	if oldAbsent {
		old = reflect.Value{}
	}
	if newAbsent {
		new = reflect.Value{}
	}
	c.errs = append(c.errs, violation(c.fieldPath(), f.kind, f.eq, old, new))
}

// fieldPath turns the path being visited into a field.Path. It allocates,
// so it is only called for an error.
func (c *checker) fieldPath() *field.Path { return pathOf(c.path) }

func pathOf(elems []pathElem) *field.Path {
	var p *field.Path
	for _, e := range elems {
		switch {
		case e.name != "" && p == nil:
			p = field.NewPath(e.name)
		case e.name != "":
			p = p.Child(e.name)
		case e.key.IsValid():
			p = p.Key(keyText(e.key))
		default:
			p = p.Index(e.index)
		}
	}
	return p
}

// sameMemory reports whether two pointers, slices or maps share their
// memory, so that everything below them is the same.
func sameMemory(a, b reflect.Value) bool {
	if !b.IsValid() || a.Kind() == reflect.Array {
		return false
	}
	if a.Kind() == reflect.Slice && a.Len() != b.Len() {
		return false
	}
	return a.UnsafePointer() == b.UnsafePointer()
}

func deref(v reflect.Value) reflect.Value {
	if !v.IsValid() || v.IsNil() {
		return reflect.Value{}
	}
	return v.Elem()
}

func lenOf(v reflect.Value) int {
	if !v.IsValid() {
		return 0
	}
	return v.Len()
}
