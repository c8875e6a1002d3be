package validate

import (
	"bytes"
	"encoding"
	"encoding/json"
	"reflect"
	"sync"
)

// maxDepth bounds how deep checks and comparisons follow nested values, so
// that a cyclic value cannot recurse forever. Objects decoded from JSON are
// far shallower (JSON decoders stop at 10000 levels).
const maxDepth = 10000

// eqClass says how values of one type are compared.
type eqClass uint8

const (
	eqString  eqClass = iota
	eqBool            // bool
	eqInt             // signed integers
	eqUint            // unsigned integers
	eqFloat           // floating point
	eqComplex         // complex numbers
	eqBytes           // []byte, compared as bytes
	eqPtr             // pointer: nil only equals nil, else the pointees
	eqIface           // interface: same dynamic type and equal values
	eqSlice           // slice: same length, equal elements (nil == empty)
	eqArray           // array: equal elements
	eqMap             // map: same keys, equal values (nil == empty)
	eqStruct          // struct: equal JSON-visible fields
	eqRaw             // raw JSON holder: same JSON meaning
	eqMethod          // has an Equal method: same fields, else Equal says so
	eqMarshal         // marshals itself: same fields, else same JSON
	eqOpaque          // chan, func, unsafe.Pointer: the same one
)

// eqInfo is the compiled comparison of one Go type. Infos form a graph that
// may be cyclic for recursive types; they are built once per type and never
// change afterwards.
type eqInfo struct {
	t      reflect.Type
	class  eqClass
	elem   *eqInfo        // eqPtr, eqSlice, eqArray, eqMap
	fields []eqField      // eqStruct
	m      *mapInfo       // eqMap
	raw    rawInfo        // eqRaw
	equal  reflect.Method // eqMethod: Equal on *t
	argPtr bool           // eqMethod: Equal takes *t, not t
}

// eqField is one JSON-visible field of a struct.
type eqField struct {
	index []int
	eq    *eqInfo
}

var (
	// compileMu serialises building eqInfos and policies; lookups go
	// through the sync.Maps without it.
	compileMu sync.Mutex
	eqInfos   sync.Map // reflect.Type -> *eqInfo

	jsonMarshalerType = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

// eqInfoFor returns the comparison for type t, building it on first use.
func eqInfoFor(t reflect.Type) *eqInfo {
	if e, ok := eqInfos.Load(t); ok {
		return e.(*eqInfo)
	}
	compileMu.Lock()
	defer compileMu.Unlock()
	return eqInfoLocked(t)
}

// eqInfoLocked is eqInfoFor for callers that hold compileMu.
func eqInfoLocked(t reflect.Type) *eqInfo {
	if e, ok := eqInfos.Load(t); ok {
		return e.(*eqInfo)
	}
	building := map[reflect.Type]*eqInfo{}
	e := buildEqInfo(t, building)
	// Publish only complete infos: the whole graph at once.
	for bt, be := range building {
		eqInfos.Store(bt, be)
	}
	return e
}

func buildEqInfo(t reflect.Type, building map[reflect.Type]*eqInfo) *eqInfo {
	if e, ok := eqInfos.Load(t); ok {
		return e.(*eqInfo)
	}
	if e, ok := building[t]; ok {
		return e
	}
	e := &eqInfo{t: t}
	building[t] = e
	if raw, ok := rawInfoFor(t); ok {
		e.class, e.raw = eqRaw, raw
		return e
	}
	if t.Kind() != reflect.Pointer && t.Kind() != reflect.Interface {
		if m, argPtr, ok := equalMethod(t); ok {
			e.class, e.equal, e.argPtr = eqMethod, m, argPtr
			return e
		}
		pt := reflect.PointerTo(t)
		if pt.Implements(jsonMarshalerType) || pt.Implements(textMarshalerType) {
			e.class = eqMarshal
			return e
		}
	}
	switch t.Kind() {
	case reflect.String:
		e.class = eqString
	case reflect.Bool:
		e.class = eqBool
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		e.class = eqInt
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		e.class = eqUint
	case reflect.Float32, reflect.Float64:
		e.class = eqFloat
	case reflect.Complex64, reflect.Complex128:
		e.class = eqComplex
	case reflect.Pointer:
		e.class, e.elem = eqPtr, buildEqInfo(t.Elem(), building)
	case reflect.Interface:
		e.class = eqIface
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			e.class = eqBytes
			break
		}
		e.class, e.elem = eqSlice, buildEqInfo(t.Elem(), building)
	case reflect.Array:
		e.class, e.elem = eqArray, buildEqInfo(t.Elem(), building)
	case reflect.Map:
		e.class, e.elem, e.m = eqMap, buildEqInfo(t.Elem(), building), newMapInfo(t)
	case reflect.Struct:
		e.class = eqStruct
		for _, f := range jsonFields(t) {
			e.fields = append(e.fields, eqField{index: f.index, eq: buildEqInfo(f.sf.Type, building)})
		}
	default: // chan, func, unsafe.Pointer
		e.class = eqOpaque
	}
	return e
}

// equalMethod finds a method `Equal(T) bool` or `Equal(*T) bool` on t or *t.
func equalMethod(t reflect.Type) (m reflect.Method, argPtr, ok bool) {
	pt := reflect.PointerTo(t)
	m, ok = pt.MethodByName("Equal")
	if !ok {
		return m, false, false
	}
	ft := m.Type // receiver first
	if ft.NumIn() != 2 || ft.NumOut() != 1 || ft.Out(0).Kind() != reflect.Bool {
		return m, false, false
	}
	switch ft.In(1) {
	case t:
		return m, false, true
	case pt:
		return m, true, true
	}
	return m, false, false
}

// equalOrAbsent compares two values of e's type, either of which may be the
// invalid Value that stands for "absent"; absent equals a zero value.
func (c *checker) equalOrAbsent(e *eqInfo, a, b reflect.Value, depth int) bool {
	switch {
	case a.IsValid() && b.IsValid():
		return c.equal(e, a, b, depth)
	case a.IsValid():
		return c.zero(e, a, depth)
	case b.IsValid():
		return c.zero(e, b, depth)
	}
	return true
}

// equal compares two valid values of type e.t without allocating unless a
// slow path (raw JSON with different bytes, Equal methods, marshalers) is
// needed.
func (c *checker) equal(e *eqInfo, a, b reflect.Value, depth int) bool {
	if depth > maxDepth {
		return false
	}
	switch e.class {
	case eqString:
		return a.String() == b.String()
	case eqBool:
		return a.Bool() == b.Bool()
	case eqInt:
		return a.Int() == b.Int()
	case eqUint:
		return a.Uint() == b.Uint()
	case eqFloat:
		x, y := a.Float(), b.Float()
		return x == y || (x != x && y != y) // NaN equals NaN: the same value
	case eqComplex:
		return a.Complex() == b.Complex()
	case eqBytes:
		return bytes.Equal(a.Bytes(), b.Bytes())
	case eqPtr:
		if a.IsNil() || b.IsNil() {
			// A pointer to a value whose JSON is null reads back as nil.
			return c.jsonNull(e, a, depth) && c.jsonNull(e, b, depth)
		}
		if a.Pointer() == b.Pointer() {
			return true
		}
		return c.equal(e.elem, a.Elem(), b.Elem(), depth+1)
	case eqIface:
		return c.ifaceEqual(e, a, b, depth)
	case eqSlice:
		n := a.Len()
		if n != b.Len() {
			return false
		}
		if n == 0 || a.Pointer() == b.Pointer() {
			return true
		}
		for i := range n {
			if !c.equal(e.elem, a.Index(i), b.Index(i), depth+1) {
				return false
			}
		}
		return true
	case eqArray:
		for i := range a.Len() {
			if !c.equal(e.elem, a.Index(i), b.Index(i), depth+1) {
				return false
			}
		}
		return true
	case eqMap:
		return c.mapsEqual(e, a, b, depth)
	case eqStruct:
		for i := range e.fields {
			f := &e.fields[i]
			if !c.equalOrAbsent(f.eq, fieldOf(a, f.index), fieldOf(b, f.index), depth+1) {
				return false
			}
		}
		return true
	case eqRaw:
		return rawEqual(e, a, b)
	case eqMethod, eqMarshal:
		return structuralEqual(a, b, depth) || slowEqual(e, a, b)
	default: // eqOpaque
		return opaqueEqual(a, b)
	}
}

// ifaceEqual compares two interface values: nil (or holding a value whose
// JSON is null) equals only nil; otherwise the dynamic types must be the
// same and the values equal.
func (c *checker) ifaceEqual(e *eqInfo, a, b reflect.Value, depth int) bool {
	za, zb := c.zero(e, a, depth), c.zero(e, b, depth)
	if za || zb {
		return za && zb
	}
	ea, eb := a.Elem(), b.Elem()
	if ea.Type() != eb.Type() {
		return false
	}
	return c.equal(eqInfoFor(ea.Type()), ea, eb, depth+1)
}

// zero reports whether a valid value counts as absent: the zero value of
// its type, a nil pointer, an empty slice or map, null raw JSON.
func (c *checker) zero(e *eqInfo, v reflect.Value, depth int) bool {
	if depth > maxDepth {
		return false
	}
	switch e.class {
	case eqString, eqBytes, eqSlice, eqMap:
		return v.Len() == 0
	case eqBool:
		return !v.Bool()
	case eqInt:
		return v.Int() == 0
	case eqUint:
		return v.Uint() == 0
	case eqFloat:
		return v.Float() == 0
	case eqComplex:
		return v.Complex() == 0
	case eqPtr, eqIface:
		return c.jsonNull(e, v, depth)
	case eqOpaque:
		return v.IsNil()
	case eqArray:
		for i := range v.Len() {
			if !c.zero(e.elem, v.Index(i), depth+1) {
				return false
			}
		}
		return true
	case eqStruct:
		for i := range e.fields {
			f := &e.fields[i]
			if fv := fieldOf(v, f.index); fv.IsValid() && !c.zero(f.eq, fv, depth+1) {
				return false
			}
		}
		return true
	case eqRaw:
		return rawAbsent(e, v)
	default: // eqMethod, eqMarshal
		return v.IsZero() || slowEqual(e, v, reflect.Zero(e.t))
	}
}

// jsonNull reports whether a value's JSON is null, so that it reads back as
// a nil pointer or interface: nil itself, a nil slice or map, null raw JSON,
// a type that marshals itself to null (a zero metav1.Time), or a pointer or
// interface holding any of these.
func (c *checker) jsonNull(e *eqInfo, v reflect.Value, depth int) bool {
	if depth > maxDepth {
		return false
	}
	switch e.class {
	case eqPtr:
		return v.IsNil() || c.jsonNull(e.elem, v.Elem(), depth+1)
	case eqIface:
		return v.IsNil() || c.jsonNull(eqInfoFor(v.Elem().Type()), v.Elem(), depth+1)
	case eqSlice, eqBytes, eqMap:
		return v.IsNil()
	case eqRaw:
		return rawAbsent(e, v)
	case eqMethod, eqMarshal:
		return marshalsToNull(v)
	}
	return false
}

// marshalsToNull reports whether a self-marshalling value's JSON is null. It
// allocates, so it is only asked when one side of a comparison is nil.
func marshalsToNull(v reflect.Value) (null bool) {
	defer func() {
		if recover() != nil {
			null = false
		}
	}()
	p, ok := addressable(v)
	if !ok {
		return false
	}
	b, err := json.Marshal(p.Interface())
	return err == nil && string(b) == "null"
}

// structuralEqual compares every field, exported or not, of two values of
// the same type. It is the fast path for types with an Equal method or their
// own JSON form: values that are the same field by field are equal.
func structuralEqual(a, b reflect.Value, depth int) bool {
	if depth > maxDepth {
		return false
	}
	switch a.Kind() {
	case reflect.String:
		return a.String() == b.String()
	case reflect.Bool:
		return a.Bool() == b.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return a.Int() == b.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return a.Uint() == b.Uint()
	case reflect.Float32, reflect.Float64:
		return a.Float() == b.Float()
	case reflect.Complex64, reflect.Complex128:
		return a.Complex() == b.Complex()
	case reflect.Pointer:
		if a.Pointer() == b.Pointer() {
			return true
		}
		if a.IsNil() || b.IsNil() {
			return false
		}
		return structuralEqual(a.Elem(), b.Elem(), depth+1)
	case reflect.Interface:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		if a.Elem().Type() != b.Elem().Type() {
			return false
		}
		return structuralEqual(a.Elem(), b.Elem(), depth+1)
	case reflect.Slice:
		if a.Len() != b.Len() {
			return false
		}
		if a.Len() == 0 || a.Pointer() == b.Pointer() {
			return true
		}
		fallthrough
	case reflect.Array:
		for i := range a.Len() {
			if !structuralEqual(a.Index(i), b.Index(i), depth+1) {
				return false
			}
		}
		return true
	case reflect.Map:
		if a.Len() != b.Len() {
			return false
		}
		if a.Len() == 0 || a.Pointer() == b.Pointer() {
			return true
		}
		it := a.MapRange()
		for it.Next() {
			bv := b.MapIndex(it.Key())
			if !bv.IsValid() || !structuralEqual(it.Value(), bv, depth+1) {
				return false
			}
		}
		return true
	case reflect.Struct:
		for i := range a.NumField() {
			if !structuralEqual(a.Field(i), b.Field(i), depth+1) {
				return false
			}
		}
		return true
	case reflect.Func:
		return a.IsNil() && b.IsNil()
	default: // chan, unsafe.Pointer
		return a.Pointer() == b.Pointer()
	}
}

// opaqueEqual compares values JSON cannot represent: the same one or both nil.
func opaqueEqual(a, b reflect.Value) bool {
	if a.Kind() == reflect.Func {
		return a.IsNil() && b.IsNil()
	}
	return a.Pointer() == b.Pointer()
}

// slowEqual compares two values of a type with an Equal method (by calling
// it) or with its own JSON form (by comparing the JSON). It allocates, so it
// only runs when the fields differ. Any failure counts as "not equal".
func slowEqual(e *eqInfo, a, b reflect.Value) (equal bool) {
	defer func() {
		if recover() != nil {
			equal = false
		}
	}()
	pa, okA := addressable(a)
	pb, okB := addressable(b)
	if !okA || !okB {
		return false
	}
	if e.class == eqMethod {
		arg := pb
		if !e.argPtr {
			arg = pb.Elem()
		}
		return e.equal.Func.Call([]reflect.Value{pa, arg})[0].Bool()
	}
	ja, errA := json.Marshal(pa.Interface())
	jb, errB := json.Marshal(pb.Interface())
	if errA != nil || errB != nil {
		return false
	}
	return jsonBytesEqual(ja, jb)
}

// addressable returns a pointer to v's value (v itself when addressable,
// else a copy), or false when v was reached through unexported fields.
func addressable(v reflect.Value) (reflect.Value, bool) {
	if !v.CanInterface() {
		return reflect.Value{}, false
	}
	if v.CanAddr() {
		return v.Addr(), true
	}
	p := reflect.New(v.Type())
	p.Elem().Set(v)
	return p, true
}
