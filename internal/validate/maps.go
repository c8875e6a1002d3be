package validate

import (
	"cmp"
	"reflect"
	"sort"
	"strings"
)

// keyOrder says how the keys of a map sort.
type keyOrder uint8

const (
	keyString keyOrder = iota
	keyInt
	keyUint
	keyFloat
	keyBool
	keyOther // structs, arrays, pointers, interfaces: no natural order
)

// mapInfo describes one map type for pairing entries by key without
// allocating: entries are copied into reusable slices and sorted.
type mapInfo struct {
	t     reflect.Type
	order keyOrder
	keys  reflect.Type // []K
	vals  reflect.Type // []V
}

func newMapInfo(t reflect.Type) *mapInfo {
	m := &mapInfo{t: t, keys: reflect.SliceOf(t.Key()), vals: reflect.SliceOf(t.Elem())}
	switch t.Key().Kind() {
	case reflect.String:
		m.order = keyString
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		m.order = keyInt
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		m.order = keyUint
	case reflect.Float32, reflect.Float64:
		m.order = keyFloat
	case reflect.Bool:
		m.order = keyBool
	default:
		m.order = keyOther
	}
	return m
}

// compareKeys orders two map keys; it is not used for keyOther.
func compareKeys(o keyOrder, a, b reflect.Value) int {
	switch o {
	case keyString:
		return strings.Compare(a.String(), b.String())
	case keyInt:
		return cmp.Compare(a.Int(), b.Int())
	case keyUint:
		return cmp.Compare(a.Uint(), b.Uint())
	case keyFloat:
		return cmp.Compare(a.Float(), b.Float())
	case keyBool:
		switch x, y := a.Bool(), b.Bool(); {
		case x == y:
			return 0
		case !x:
			return -1
		}
		return 1
	}
	return 0
}

// mapScratch holds the sorted entries of an old and a new map while they are
// compared. A checker keeps them for reuse, so that steady-state checks do
// not allocate.
type mapScratch struct {
	side [2]sortedMap
}

// sortedMap is a map's entries copied into slices and ordered by key
// through perm. It implements sort.Interface.
type sortedMap struct {
	keys, vals reflect.Value // []K and []V with len == cap
	perm       []int
	n          int
	order      keyOrder
}

func (s *sortedMap) Len() int      { return s.n }
func (s *sortedMap) Swap(i, j int) { s.perm[i], s.perm[j] = s.perm[j], s.perm[i] }
func (s *sortedMap) Less(i, j int) bool {
	return compareKeys(s.order, s.keys.Index(s.perm[i]), s.keys.Index(s.perm[j])) < 0
}

// key and val return the i-th entry in key order.
func (s *sortedMap) key(i int) reflect.Value { return s.keys.Index(s.perm[i]) }
func (s *sortedMap) val(i int) reflect.Value { return s.vals.Index(s.perm[i]) }

// load copies the entries of map m (invalid: none) and sorts them.
func (s *sortedMap) load(mi *mapInfo, m reflect.Value) {
	s.order, s.n = mi.order, 0
	if !m.IsValid() || m.Len() == 0 {
		return
	}
	n := m.Len()
	if !s.keys.IsValid() || s.keys.Len() < n {
		size := max(n, 8)
		if s.keys.IsValid() {
			size = max(size, 2*s.keys.Len())
		}
		s.keys = reflect.MakeSlice(mi.keys, size, size)
		s.vals = reflect.MakeSlice(mi.vals, size, size)
		s.perm = make([]int, size)
	}
	var it reflect.MapIter
	it.Reset(m)
	for s.n < n && it.Next() {
		s.keys.Index(s.n).SetIterKey(&it)
		s.vals.Index(s.n).SetIterValue(&it)
		s.perm[s.n] = s.n
		s.n++
	}
	it.Reset(reflect.Value{})
	sort.Sort(s)
}

// clear drops the copied entries so that the scratch keeps nothing alive.
func (s *sortedMap) clear() {
	for i := range s.n {
		s.keys.Index(i).SetZero()
		s.vals.Index(i).SetZero()
	}
	s.n = 0
}

// acquire hands out scratch for map type mi; release gives it back.
// Nested maps of the same type get scratch of their own.
func (c *checker) acquire(mi *mapInfo) *mapScratch {
	free := c.scratch[mi]
	if n := len(free); n > 0 {
		s := free[n-1]
		c.scratch[mi] = free[:n-1]
		return s
	}
	return &mapScratch{}
}

func (c *checker) release(mi *mapInfo, s *mapScratch) {
	s.side[0].clear()
	s.side[1].clear()
	c.scratch[mi] = append(c.scratch[mi], s)
}

// mapsEqual compares two maps: the same keys with equal values.
func (c *checker) mapsEqual(e *eqInfo, a, b reflect.Value, depth int) bool {
	n := a.Len()
	if n != b.Len() {
		return false
	}
	if n == 0 || a.UnsafePointer() == b.UnsafePointer() {
		return true
	}
	if e.m.order == keyOther || !a.CanInterface() || !b.CanInterface() {
		return c.mapsEqualByLookup(e, a, b, depth)
	}
	s := c.acquire(e.m)
	defer c.release(e.m, s)
	sa, sb := &s.side[0], &s.side[1]
	sa.load(e.m, a)
	sb.load(e.m, b)
	if sa.n != n || sb.n != n {
		return false // changed while being read
	}
	for i := range n {
		if compareKeys(e.m.order, sa.key(i), sb.key(i)) != 0 {
			return false
		}
		if !c.equal(e.elem, sa.val(i), sb.val(i), depth+1) {
			return false
		}
	}
	return true
}

// mapsEqualByLookup compares maps whose keys have no order (or that were
// reached through unexported fields) by looking every key up; it allocates.
func (c *checker) mapsEqualByLookup(e *eqInfo, a, b reflect.Value, depth int) bool {
	it := a.MapRange()
	for it.Next() {
		bv := b.MapIndex(it.Key())
		if !bv.IsValid() || !c.equal(e.elem, it.Value(), bv, depth+1) {
			return false
		}
	}
	return true
}
