package validate

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestValidateUpdate(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	berlin := time.FixedZone("Berlin", 2*3600)
	tests := []struct {
		name     string
		old, new *shapes
		want     []string
	}{
		{"nothing set", &shapes{}, &shapes{}, nil},
		{"everything unchanged", fullShapes(), fullShapes(), nil},

		{"string set", &shapes{}, &shapes{Str: "a"}, []string{"str set"}},
		{"string removed", &shapes{Str: "a"}, &shapes{}, []string{"str unset"}},
		{"string changed", &shapes{Str: "a"}, &shapes{Str: "b"}, []string{"str changed"}},
		{"string unchanged", &shapes{Str: "a"}, &shapes{Str: "a"}, nil},
		{"int set", &shapes{}, &shapes{Int: 2}, []string{"int set"}},
		{"int changed", &shapes{Int: 1}, &shapes{Int: -1}, []string{"int changed"}},
		{"uint changed", &shapes{Uint: 1}, &shapes{Uint: 2}, []string{"uint changed"}},
		{"bool set", &shapes{}, &shapes{Bool: true}, []string{"bool set"}},
		{"bool removed", &shapes{Bool: true}, &shapes{}, []string{"bool unset"}},
		{"float changed", &shapes{Float: 0.5}, &shapes{Float: 0.25}, []string{"float changed"}},

		{"pointer to scalar: nil to zero is a set", &shapes{}, &shapes{PtrStr: ptr("")}, []string{"ptrStr set"}},
		{"pointer to scalar: zero to nil is a removal", &shapes{PtrStr: ptr("")}, &shapes{}, []string{"ptrStr unset"}},
		{"pointer to scalar: equal values, different pointers", &shapes{PtrStr: ptr("a")}, &shapes{PtrStr: ptr("a")}, nil},
		{"pointer to scalar: changed", &shapes{PtrStr: ptr("a")}, &shapes{PtrStr: ptr("b")}, []string{"ptrStr changed"}},

		{"tagged pointer to struct: set", &shapes{}, &shapes{PtrStruct: &leaf{}}, []string{"ptrStruct set"}},
		{"tagged pointer to struct: deep equal", &shapes{PtrStruct: &leaf{ID: "a", Name: "n"}}, &shapes{PtrStruct: &leaf{ID: "a", Name: "n"}}, nil},
		{"tagged pointer to struct: untagged field inside changed", &shapes{PtrStruct: &leaf{ID: "a", Name: "n"}}, &shapes{PtrStruct: &leaf{ID: "a", Name: "m"}}, []string{"ptrStruct changed"}},
		{"tagged pointer to struct: read-only inside changed is covered by the subtree", &shapes{PtrStruct: &leaf{Sec: "s"}}, &shapes{PtrStruct: &leaf{Sec: "t"}}, []string{"ptrStruct changed"}},
		{"tagged pointer to struct: removed", &shapes{PtrStruct: &leaf{ID: "a"}}, &shapes{}, []string{"ptrStruct unset"}},

		{"walked pointer: created with a create-only field", &shapes{}, &shapes{Walked: &leaf{ID: "x"}}, []string{"walked.id set"}},
		{"walked pointer: created with untagged fields only", &shapes{}, &shapes{Walked: &leaf{Name: "n"}}, nil},
		{"walked pointer: removed", &shapes{Walked: &leaf{ID: "x", Sec: "s"}}, &shapes{}, []string{"walked.id unset", "walked.sec readonly"}},
		{"walked pointer: read-only changed", &shapes{Walked: &leaf{Sec: "s"}}, &shapes{Walked: &leaf{Sec: "t"}}, []string{"walked.sec readonly"}},
		{"walked pointer: nil and pointer to zero are equal", &shapes{}, &shapes{Walked: &leaf{}}, nil},

		{"nested struct", &shapes{Nested: leaf{ID: "a"}}, &shapes{Nested: leaf{ID: "b", Name: "x"}}, []string{"nested.id changed"}},

		{"tagged slice of scalars: nil and empty are equal", &shapes{}, &shapes{Strs: []string{}}, nil},
		{"tagged slice of scalars: empty and nil are equal", &shapes{Strs: []string{}}, &shapes{}, nil},
		{"tagged slice of scalars: set", &shapes{}, &shapes{Strs: []string{"a"}}, []string{"strs set"}},
		{"tagged slice of scalars: appended", &shapes{Strs: []string{"a"}}, &shapes{Strs: []string{"a", "b"}}, []string{"strs changed"}},
		{"tagged slice of scalars: reordered", &shapes{Strs: []string{"a", "b"}}, &shapes{Strs: []string{"b", "a"}}, []string{"strs changed"}},
		{"tagged slice of scalars: removed", &shapes{Strs: []string{"a"}}, &shapes{Strs: nil}, []string{"strs unset"}},

		{"slice of structs: unchanged", &shapes{Leaves: []leaf{{ID: "a"}, {ID: "b"}}}, &shapes{Leaves: []leaf{{ID: "a"}, {ID: "b"}}}, nil},
		{"slice of structs: untagged field changes", &shapes{Leaves: []leaf{{ID: "a", Name: "x"}}}, &shapes{Leaves: []leaf{{ID: "a", Name: "y"}}}, nil},
		{
			"slice of structs: ids changed at two indexes",
			&shapes{Leaves: []leaf{{ID: "a"}, {ID: "b"}, {ID: "c"}}},
			&shapes{Leaves: []leaf{{ID: "A"}, {ID: "b"}, {ID: "C"}}},
			[]string{"leaves[0].id changed", "leaves[2].id changed"},
		},
		{"slice of structs: element appended with a create-only field", &shapes{Leaves: []leaf{{ID: "a"}}}, &shapes{Leaves: []leaf{{ID: "a"}, {ID: "b"}}}, nil},
		{"slice of structs: element appended with a read-only field", &shapes{Leaves: []leaf{{ID: "a"}}}, &shapes{Leaves: []leaf{{ID: "a"}, {Sec: "s"}}}, []string{"leaves[1].sec readonly"}},
		{"slice of structs: first element appended to a nil slice", &shapes{}, &shapes{Leaves: []leaf{{ID: "a"}}}, nil},
		{"slice of structs: element removed", &shapes{Leaves: []leaf{{ID: "a", Sec: "s"}, {ID: "b"}}}, &shapes{Leaves: []leaf{{ID: "a", Sec: "s"}}}, nil},
		{"slice of structs: all removed", &shapes{Leaves: []leaf{{ID: "a"}}}, &shapes{}, nil},
		{"slice of pointers: nil element filled in", &shapes{LeafPtrs: []*leaf{nil}}, &shapes{LeafPtrs: []*leaf{{ID: "x"}}}, []string{"leafPtrs[0].id set"}},
		{"slice of pointers: element changed", &shapes{LeafPtrs: []*leaf{{ID: "x"}}}, &shapes{LeafPtrs: []*leaf{{ID: "y"}}}, []string{"leafPtrs[0].id changed"}},

		{"array: element changed", &shapes{Arr: [2]leaf{{ID: "a"}, {ID: "b"}}}, &shapes{Arr: [2]leaf{{ID: "a"}, {ID: "c"}}}, []string{"arr[1].id changed"}},
		{"array: elements always exist, so setting is a change", &shapes{}, &shapes{Arr: [2]leaf{{ID: "a"}, {Sec: "s"}}}, []string{"arr[0].id set", "arr[1].sec readonly"}},

		{"tagged map of scalars: nil and empty are equal", &shapes{}, &shapes{StrMap: map[string]string{}}, nil},
		{"tagged map of scalars: unchanged", &shapes{StrMap: map[string]string{"a": "1", "b": "2"}}, &shapes{StrMap: map[string]string{"b": "2", "a": "1"}}, nil},
		{"tagged map of scalars: value changed", &shapes{StrMap: map[string]string{"a": "1"}}, &shapes{StrMap: map[string]string{"a": "2"}}, []string{"strMap changed"}},
		{"tagged map of scalars: key added", &shapes{StrMap: map[string]string{"a": "1"}}, &shapes{StrMap: map[string]string{"a": "1", "b": ""}}, []string{"strMap changed"}},
		{"tagged map of scalars: key renamed", &shapes{StrMap: map[string]string{"a": "1"}}, &shapes{StrMap: map[string]string{"b": "1"}}, []string{"strMap changed"}},
		{"tagged map of scalars: emptied", &shapes{StrMap: map[string]string{"a": "1"}}, &shapes{StrMap: map[string]string{}}, []string{"strMap unset"}},

		{"map of structs: value changed", &shapes{LeafMap: map[string]leaf{"k": {ID: "a"}}}, &shapes{LeafMap: map[string]leaf{"k": {ID: "b"}}}, []string{"leafMap[k].id changed"}},
		{"map of structs: key added with a create-only field", &shapes{LeafMap: map[string]leaf{"k": {ID: "a"}}}, &shapes{LeafMap: map[string]leaf{"k": {ID: "a"}, "n": {ID: "b"}}}, nil},
		{"map of structs: key added with a read-only field", &shapes{}, &shapes{LeafMap: map[string]leaf{"n": {Sec: "s"}}}, []string{"leafMap[n].sec readonly"}},
		{"map of structs: key removed", &shapes{LeafMap: map[string]leaf{"k": {ID: "a"}, "n": {ID: "b"}}}, &shapes{LeafMap: map[string]leaf{"k": {ID: "a"}}}, nil},
		{
			"map of structs: keys reported in sorted order",
			&shapes{LeafMap: map[string]leaf{"c": {ID: "1"}, "a": {ID: "1"}, "b": {ID: "1"}, "d": {ID: "1"}}},
			&shapes{LeafMap: map[string]leaf{"d": {ID: "2"}, "c": {ID: "1"}, "b": {ID: "2"}, "a": {ID: "2"}, "0": {Sec: "s"}}},
			[]string{"leafMap[0].sec readonly", "leafMap[a].id changed", "leafMap[b].id changed", "leafMap[d].id changed"},
		},
		{
			"map with int keys: numeric order",
			&shapes{IntMap: map[int]leaf{10: {ID: "a"}, 2: {ID: "a"}, -1: {ID: "a"}}},
			&shapes{IntMap: map[int]leaf{10: {ID: "b"}, 2: {ID: "b"}, -1: {ID: "b"}}},
			[]string{"intMap[-1].id changed", "intMap[2].id changed", "intMap[10].id changed"},
		},

		{"raw extension: same JSON, other spelling", &shapes{Raw: runtime.RawExtension{Raw: []byte(`{"a":1,"b":[true,null]}`)}}, &shapes{Raw: runtime.RawExtension{Raw: []byte(` { "b" : [ true , null ] , "a" : 1.0 } `)}}, nil},
		{"raw extension: changed", &shapes{Raw: runtime.RawExtension{Raw: []byte(`{"a":1}`)}}, &shapes{Raw: runtime.RawExtension{Raw: []byte(`{"a":2}`)}}, []string{"raw changed"}},
		{"raw extension: null equals absent", &shapes{Raw: runtime.RawExtension{Raw: []byte(`null`)}}, &shapes{}, nil},
		{"raw extension: empty object is set", &shapes{}, &shapes{Raw: runtime.RawExtension{Raw: []byte(`{}`)}}, []string{"raw set"}},
		{"raw extension: removed", &shapes{Raw: runtime.RawExtension{Raw: []byte(`[1]`)}}, &shapes{}, []string{"raw unset"}},
		{"raw extension: decoded object with the same JSON", &shapes{Raw: runtime.RawExtension{Raw: []byte(`{"s":"x"}`)}}, &shapes{Raw: runtime.RawExtension{Object: &jsonObject{S: "x"}}}, nil},
		{"raw message: same JSON", &shapes{RawMsg: []byte(`{"a":"x","b":2}`)}, &shapes{RawMsg: []byte(`{"b":2e0,"a":"x"}`)}, nil},
		{"raw message: changed", &shapes{RawMsg: []byte(`"x"`)}, &shapes{RawMsg: []byte(`"y"`)}, []string{"rawMsg changed"}},

		{"interface: equal maps", &shapes{Any: map[string]any{"a": []any{1.0, "x"}}}, &shapes{Any: map[string]any{"a": []any{1.0, "x"}}}, nil},
		{"interface: changed", &shapes{Any: map[string]any{"a": 1.0}}, &shapes{Any: map[string]any{"a": 2.0}}, []string{"any changed"}},
		{"interface: other dynamic type", &shapes{Any: "1"}, &shapes{Any: 1.0}, []string{"any changed"}},
		{"interface: set", &shapes{}, &shapes{Any: false}, []string{"any set"}},

		{"time: a pointer to the zero time is null in JSON, so absent", &shapes{}, &shapes{Time: &metav1.Time{}}, nil},
		{"interface: a nil pointer inside is null in JSON, so absent", &shapes{}, &shapes{Any: (*leaf)(nil)}, nil},
		{"time: same instant in another zone", &shapes{Time: &metav1.Time{Time: t0}}, &shapes{Time: &metav1.Time{Time: t0.In(berlin)}}, nil},
		{"time: changed", &shapes{Time: &metav1.Time{Time: t0}}, &shapes{Time: &metav1.Time{Time: t0.Add(time.Second)}}, []string{"time changed"}},
		{"quantity: same amount, other spelling", &shapes{Qty: resource.MustParse("1")}, &shapes{Qty: resource.MustParse("1000m")}, nil},
		{"quantity: changed", &shapes{Qty: resource.MustParse("1Gi")}, &shapes{Qty: resource.MustParse("2Gi")}, []string{"qty changed"}},
		{"quantity: set", &shapes{}, &shapes{Qty: resource.MustParse("1")}, []string{"qty set"}},
		{"quantity: zero spelled otherwise is still absent", &shapes{}, &shapes{Qty: resource.MustParse("0m")}, nil},

		{"read-only: set", &shapes{}, &shapes{RO: "x"}, []string{"ro readonly"}},
		{"read-only: changed", &shapes{RO: "x"}, &shapes{RO: "y"}, []string{"ro readonly"}},
		{"read-only: removed", &shapes{RO: "x"}, &shapes{}, []string{"ro readonly"}},
		{"read-only: unchanged", &shapes{RO: "x"}, &shapes{RO: "x"}, nil},
		{"read-only struct: changed inside", &shapes{ROStruct: &leaf{Name: "a"}}, &shapes{ROStruct: &leaf{Name: "b"}}, []string{"roStruct readonly"}},

		{"untagged field changes freely", &shapes{Free: "a"}, &shapes{Free: "b"}, nil},
		{"json:\"-\" field is ignored", &shapes{Hidden: "a"}, &shapes{Hidden: "b"}, nil},
		{"promoted field of an embedded struct", &shapes{promoted: promoted{Promoted: "a"}}, &shapes{promoted: promoted{Promoted: "b"}}, []string{"promoted changed"}},
		{"promoted field through a nil embedded pointer", &shapes{}, &shapes{Deep: &Deep{DeepID: "x"}}, []string{"deepID set"}},
		{"promoted field removed with its embedded pointer", &shapes{Deep: &Deep{DeepID: "x"}}, &shapes{}, []string{"deepID unset"}},
		{"embedded struct with a JSON name nests", &shapes{Named: namedPart{Inner: "a"}}, &shapes{Named: namedPart{Inner: "b"}}, []string{"named.inner changed"}},
		{"inline struct is promoted", &shapes{Inline: inlinePart{Inlined: "a"}}, &shapes{Inline: inlinePart{Inlined: "b"}}, []string{"inlined changed"}},

		{"nil old object: all absent", nil, &shapes{Str: "a", RO: "b"}, []string{"str set", "ro readonly"}},
		{"nil new object: all absent", &shapes{Str: "a", Leaves: []leaf{{ID: "x"}}}, nil, []string{"str unset"}},
		{
			"every violation at once, in field order",
			fullShapes(),
			func() *shapes {
				s := fullShapes()
				s.Str, s.Int, s.Bool = "other", 0, false
				s.Leaves[1].ID = "changed"
				s.LeafMap["b"] = leaf{ID: "changed"}
				s.RO = "mine"
				s.Inline.Inlined = ""
				return s
			}(),
			[]string{"str changed", "int unset", "bool unset", "leaves[1].id changed", "leafMap[b].id changed", "leafMap[b].sec readonly", "ro readonly", "inlined unset"},
		},
	}
	p, err := For[*shapes]()
	require.NoError(t, err)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := p.ValidateUpdate(tt.old, tt.new)
			if tt.want == nil {
				assert.Empty(t, errs)
				return
			}
			assert.Equal(t, tt.want, describe(errs))
		})
	}
}

// jsonObject is a runtime.Object for RawExtension.Object.
type jsonObject struct {
	S string `json:"s"`
}

func (o *jsonObject) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }
func (o *jsonObject) DeepCopyObject() runtime.Object   { c := *o; return &c }

func fullShapes() *shapes {
	return &shapes{
		Str: "s", Int: 1, Uint: 2, Bool: true, Float: 1.5,
		PtrStr:    ptr("p"),
		PtrStruct: &leaf{ID: "ps", Name: "n", Sec: "sec"},
		Walked:    &leaf{ID: "w"},
		Nested:    leaf{ID: "n"},
		Strs:      []string{"a", "b"},
		Leaves:    []leaf{{ID: "l0"}, {ID: "l1", Sec: "s1"}},
		LeafPtrs:  []*leaf{{ID: "lp0"}, nil},
		Arr:       [2]leaf{{ID: "a0"}, {ID: "a1"}},
		StrMap:    map[string]string{"x": "1", "y": "2"},
		LeafMap:   map[string]leaf{"a": {ID: "a"}, "b": {ID: "b", Sec: "s"}},
		IntMap:    map[int]leaf{1: {ID: "one"}},
		Raw:       runtime.RawExtension{Raw: []byte(`{"k":[1,2]}`)},
		RawMsg:    []byte(`{"m":true}`),
		Any:       map[string]any{"a": []any{"x", 2.0}},
		Time:      &metav1.Time{Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)},
		Qty:       resource.MustParse("500Mi"),
		RO:        "ro",
		ROStruct:  &leaf{Name: "r"},
		Free:      "f",
		promoted:  promoted{Promoted: "pr"},
		Deep:      &Deep{DeepID: "d"},
		Named:     namedPart{Inner: "in"},
		Inline:    inlinePart{Inlined: "il"},
	}
}

func TestValidateCreate(t *testing.T) {
	tests := []struct {
		name string
		obj  *shapes
		want []string
	}{
		{"nil object", nil, nil},
		{"empty object", &shapes{}, nil},
		{"create-only fields may be set", &shapes{Str: "a", Leaves: []leaf{{ID: "x"}}, LeafMap: map[string]leaf{"k": {ID: "y"}}, PtrStruct: &leaf{ID: "z"}}, nil},
		{"read-only field set", &shapes{RO: "x"}, []string{"ro readonly"}},
		{"read-only struct set to an empty value", &shapes{ROStruct: &leaf{}}, []string{"roStruct readonly"}},
		{"read-only fields in list and map elements", &shapes{Leaves: []leaf{{ID: "a"}, {Sec: "s"}}, LeafMap: map[string]leaf{"b": {Sec: "s"}, "a": {Sec: "s"}}}, []string{"leaves[1].sec readonly", "leafMap[a].sec readonly", "leafMap[b].sec readonly"}},
		{"read-only inside a create-only value", &shapes{PtrStruct: &leaf{ID: "a", Sec: "s"}}, []string{"ptrStruct.sec readonly"}},
		{"read-only behind a walked pointer", &shapes{Walked: &leaf{Sec: "s"}}, []string{"walked.sec readonly"}},
		{"read-only set to its zero value", &shapes{RO: ""}, nil},
	}
	p, err := For[*shapes]()
	require.NoError(t, err)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := p.ValidateCreate(tt.obj)
			if tt.want == nil {
				assert.Empty(t, errs)
				return
			}
			assert.Equal(t, tt.want, describe(errs))
		})
	}
}

func TestReadOnlyInsideCreateOnlyOnlyMattersOnCreate(t *testing.T) {
	p, err := For[*instance]()
	require.NoError(t, err)

	old := newInstance()
	// The placement (create-only) carries a read-only field that lockstep
	// sets; an unchanged placement passes on update.
	assert.Empty(t, p.ValidateUpdate(old, newInstance()))

	// A new list element whose create-only value holds the read-only field
	// is a creation, so the nested rule applies.
	type wrapper struct {
		List []instanceSpec `json:"list"`
	}
	pw, err := For[wrapper]()
	require.NoError(t, err)
	errs := pw.ValidateUpdate(wrapper{}, wrapper{List: []instanceSpec{{Placement: placement{Assigned: "n"}}}})
	assert.Equal(t, []string{"list[0].placement.assigned readonly"}, describe(errs))
}

func TestValidateAcceptsValuesAndPointers(t *testing.T) {
	p, err := For[shapes]()
	require.NoError(t, err)
	assert.Equal(t, []string{"str changed"}, describe(p.ValidateUpdate(shapes{Str: "a"}, &shapes{Str: "b"})))
	assert.Equal(t, []string{"ro readonly"}, describe(p.ValidateCreate(shapes{RO: "a"})))
	assert.Equal(t, []string{"str set"}, describe(p.ValidateUpdate(nil, shapes{Str: "b"})))
	assert.Empty(t, p.ValidateCreate(nil))
}

func TestValidateRejectsOtherTypes(t *testing.T) {
	p, err := For[shapes]()
	require.NoError(t, err)
	for _, obj := range []any{leaf{}, &leaf{}, "shapes", 1, []shapes{}, new(*shapes)} {
		errs := p.ValidateCreate(obj)
		require.Len(t, errs, 1, "%T", obj)
		assert.Equal(t, field.ErrorTypeInternal, errs[0].Type)
		assert.Contains(t, errs[0].Detail, "cannot check a")

		errs = p.ValidateUpdate(&shapes{}, obj)
		require.Len(t, errs, 1, "%T", obj)
		assert.Equal(t, field.ErrorTypeInternal, errs[0].Type)
		errs = p.ValidateUpdate(obj, &shapes{})
		require.Len(t, errs, 1, "%T", obj)
	}
}

func TestGenericHelpers(t *testing.T) {
	assert.Equal(t, []string{"str changed"}, describe(ValidateUpdate(&shapes{Str: "a"}, &shapes{Str: "b"})))
	assert.Equal(t, []string{"str changed"}, describe(ValidateUpdate(shapes{Str: "a"}, shapes{Str: "b"})))
	assert.Equal(t, []string{"ro readonly"}, describe(ValidateCreate(&shapes{RO: "x"})))
	assert.Empty(t, ValidateCreate[*shapes](nil))

	errs := ValidateUpdate(1, 2)
	require.Len(t, errs, 1)
	assert.Equal(t, field.ErrorTypeInternal, errs[0].Type)
	assert.Contains(t, errs[0].Detail, "not a struct")

	errs = ValidateCreate(badTag{})
	require.Len(t, errs, 1)
	assert.Equal(t, field.ErrorTypeInternal, errs[0].Type)
	assert.Contains(t, errs[0].Detail, `unknown lockstep tag value "immutable"`)
}

func TestTypeWithoutRules(t *testing.T) {
	type plain struct {
		A string            `json:"a"`
		M map[string]string `json:"m"`
	}
	p, err := For[plain]()
	require.NoError(t, err)
	assert.Empty(t, p.Rules())
	assert.Empty(t, p.ValidateUpdate(plain{A: "x"}, plain{A: "y"}))
	assert.Empty(t, p.ValidateCreate(plain{A: "x"}))
}

type badTag struct {
	A string `json:"a" lockstep:"immutable"`
}

func TestPointersToNullJSONAreAbsent(t *testing.T) {
	p, err := For[*instance]()
	require.NoError(t, err)
	for _, secret := range []*runtime.RawExtension{{Raw: []byte("null")}, {Raw: []byte(" ")}, {}} {
		assert.Empty(t, p.ValidateUpdate(&instance{}, &instance{Spec: instanceSpec{Secret: secret}}), "%q", secret.Raw)
		assert.Empty(t, p.ValidateUpdate(&instance{Spec: instanceSpec{Secret: secret}}, &instance{}), "%q", secret.Raw)
	}
	errs := p.ValidateUpdate(&instance{Spec: instanceSpec{Secret: &runtime.RawExtension{Raw: []byte("null")}}},
		&instance{Spec: instanceSpec{Secret: &runtime.RawExtension{Raw: []byte(`{"k":1}`)}}})
	assert.Equal(t, []string{"spec.secret set"}, describe(errs))
}
