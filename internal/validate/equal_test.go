package validate

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestJSONBytesEqual(t *testing.T) {
	tests := []struct {
		a, b  string
		equal bool
	}{
		{`{"a":1,"b":2}`, `{"b":2,"a":1}`, true},
		{` {"a" : [1, 2.0, {"c": null}]} `, `{"a":[1,2,{"c":null}]}`, true},
		{`12345678901234567890`, `12345678901234567891`, false},
		{`1e2`, `100`, true},
		{`"x"`, `"x" `, true},
		{``, `null`, true},
		{`  `, ``, true},
		{`null`, `{}`, false},
		{`{}`, `[]`, false},
		{`[1,2]`, `[2,1]`, false},
		{`{"a":1}`, `{"a":1,"b":1}`, false},
		{`{"a":1}`, `{"b":1}`, false},
		{`true`, `"true"`, false},
		{`1`, `"1"`, false},
		{`{"a":1} {"b":2}`, `{"a":1}`, false},
		{`{"a":`, `{"a":`, true},
		{`{"a":`, `{"a": `, false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.equal, jsonBytesEqual([]byte(tt.a), []byte(tt.b)), "%s vs %s", tt.a, tt.b)
		assert.Equal(t, tt.equal, jsonBytesEqual([]byte(tt.b), []byte(tt.a)), "%s vs %s", tt.b, tt.a)
	}
}

type equalCases struct {
	IntOrStr intstr.IntOrString         `json:"intOrStr,omitempty" lockstep:"createonly"`
	Schema   *apiextensionsv1.JSON      `json:"schema,omitempty" lockstep:"createonly"`
	Floats   []float64                  `json:"floats,omitempty" lockstep:"createonly"`
	Any      any                        `json:"any,omitempty" lockstep:"createonly"`
	Keyed    map[structKey]string       `json:"keyed,omitempty" lockstep:"createonly"`
	Nested   map[string]map[string]leaf `json:"nested,omitempty" lockstep:"createonly"`
	Chan     *withChan                  `json:"chan,omitempty" lockstep:"createonly"`
	Arr      [2]string                  `json:"arr,omitempty" lockstep:"createonly"`
	Bytes    []byte                     `json:"bytes,omitempty" lockstep:"createonly"`
	Hidden   *withHiddenMap             `json:"hidden,omitempty" lockstep:"createonly"`
}

type withChan struct {
	Name string   `json:"name"`
	C    chan int `json:"c"`
}

type hiddenMap struct {
	M map[string]string `json:"m"`
}

type withHiddenMap struct {
	hiddenMap
}

func TestEquality(t *testing.T) {
	ch := make(chan int)
	tests := []struct {
		name     string
		old, new equalCases
		equal    bool
	}{
		{"marshaler: fields differ, JSON the same", equalCases{IntOrStr: intstr.IntOrString{IntVal: 1}}, equalCases{IntOrStr: intstr.IntOrString{IntVal: 1, StrVal: "ignored"}}, true},
		{"marshaler: JSON differs", equalCases{IntOrStr: intstr.FromInt32(1)}, equalCases{IntOrStr: intstr.FromString("1")}, false},
		{"apiextensions JSON: same meaning", equalCases{Schema: &apiextensionsv1.JSON{Raw: []byte(`{"a":[1]}`)}}, equalCases{Schema: &apiextensionsv1.JSON{Raw: []byte(`{ "a": [1.0] }`)}}, true},
		{"apiextensions JSON: changed", equalCases{Schema: &apiextensionsv1.JSON{Raw: []byte(`{"a":1}`)}}, equalCases{Schema: &apiextensionsv1.JSON{Raw: []byte(`{"a":"1"}`)}}, false},
		{"NaN equals NaN", equalCases{Floats: []float64{math.NaN()}}, equalCases{Floats: []float64{math.NaN()}}, true},
		{"minus zero equals zero", equalCases{Floats: []float64{math.Copysign(0, -1)}}, equalCases{Floats: []float64{0}}, true},
		{"interface: nil equals a nil slice inside", equalCases{}, equalCases{Any: []any(nil)}, true},
		{"interface: nil is not an empty slice", equalCases{}, equalCases{Any: []any{}}, false},
		{"interface: nested maps, other key", equalCases{Any: map[string]any{"a": map[string]any{"b": 1.0}}}, equalCases{Any: map[string]any{"a": map[string]any{"c": 1.0}}}, false},
		{"interface: nested maps, same", equalCases{Any: map[string]any{"a": map[string]any{"b": 1.0, "c": []any{"x"}}}}, equalCases{Any: map[string]any{"a": map[string]any{"c": []any{"x"}, "b": 1.0}}}, true},
		{"map with struct keys: same", equalCases{Keyed: map[structKey]string{{"a", "b"}: "x"}}, equalCases{Keyed: map[structKey]string{{"a", "b"}: "x"}}, true},
		{"map with struct keys: other key", equalCases{Keyed: map[structKey]string{{"a", "b"}: "x"}}, equalCases{Keyed: map[structKey]string{{"a", "c"}: "x"}}, false},
		{"nested maps: same", equalCases{Nested: map[string]map[string]leaf{"a": {"b": {ID: "1"}}, "c": {}}}, equalCases{Nested: map[string]map[string]leaf{"c": nil, "a": {"b": {ID: "1"}}}}, true},
		{"nested maps: inner value differs", equalCases{Nested: map[string]map[string]leaf{"a": {"b": {ID: "1"}}}}, equalCases{Nested: map[string]map[string]leaf{"a": {"b": {ID: "2"}}}}, false},
		{"chan: the same one", equalCases{Chan: &withChan{Name: "a", C: ch}}, equalCases{Chan: &withChan{Name: "a", C: ch}}, true},
		{"chan: another one", equalCases{Chan: &withChan{Name: "a", C: ch}}, equalCases{Chan: &withChan{Name: "a", C: make(chan int)}}, false},
		{"array: same", equalCases{Arr: [2]string{"a", "b"}}, equalCases{Arr: [2]string{"a", "b"}}, true},
		{"array: changed", equalCases{Arr: [2]string{"a", "b"}}, equalCases{Arr: [2]string{"a", "c"}}, false},
		{"bytes: same", equalCases{Bytes: []byte("ab")}, equalCases{Bytes: []byte("ab")}, true},
		{"bytes: nil equals empty", equalCases{}, equalCases{Bytes: []byte{}}, true},
		{"bytes: changed", equalCases{Bytes: []byte("ab")}, equalCases{Bytes: []byte("ac")}, false},
		{"map under an unexported embedded struct: same", equalCases{Hidden: &withHiddenMap{hiddenMap{M: map[string]string{"a": "1", "b": "2"}}}}, equalCases{Hidden: &withHiddenMap{hiddenMap{M: map[string]string{"b": "2", "a": "1"}}}}, true},
		{"map under an unexported embedded struct: changed", equalCases{Hidden: &withHiddenMap{hiddenMap{M: map[string]string{"a": "1"}}}}, equalCases{Hidden: &withHiddenMap{hiddenMap{M: map[string]string{"a": "2"}}}}, false},
	}
	p, err := For[equalCases]()
	require.NoError(t, err)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := p.ValidateUpdate(&tt.old, &tt.new)
			if tt.equal {
				assert.Empty(t, errs)
			} else {
				assert.Len(t, errs, 1)
			}
		})
	}
}

func TestStructuralEqual(t *testing.T) {
	type inner struct {
		m map[string]int
		s []int
		p *int
		i any
		f func()
	}
	one, alsoOne := 1, 1
	tests := []struct {
		name  string
		a, b  inner
		equal bool
	}{
		{"zero", inner{}, inner{}, true},
		{"maps with the same entries", inner{m: map[string]int{"a": 1, "b": 2}}, inner{m: map[string]int{"b": 2, "a": 1}}, true},
		{"maps with other entries", inner{m: map[string]int{"a": 1}}, inner{m: map[string]int{"a": 2}}, false},
		{"maps with other keys", inner{m: map[string]int{"a": 1}}, inner{m: map[string]int{"b": 1}}, false},
		{"slices", inner{s: []int{1, 2}}, inner{s: []int{1, 2}}, true},
		{"slices differ", inner{s: []int{1, 2}}, inner{s: []int{1}}, false},
		{"pointers to equal values", inner{p: &one}, inner{p: &alsoOne}, true},
		{"nil and non-nil pointer", inner{p: &one}, inner{}, false},
		{"interfaces", inner{i: "x"}, inner{i: "x"}, true},
		{"interfaces of other types", inner{i: "1"}, inner{i: 1}, false},
		{"nil func and a func", inner{}, inner{f: func() {}}, false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.equal, structuralEqual(reflect.ValueOf(tt.a), reflect.ValueOf(tt.b), 0), tt.name)
	}
}

type zeroes struct {
	U uint               `json:"u,omitempty" lockstep:"readonly"`
	F float32            `json:"f,omitempty" lockstep:"readonly"`
	A [2]int             `json:"a,omitempty" lockstep:"readonly"`
	B []byte             `json:"b,omitempty" lockstep:"readonly"`
	M map[string]int     `json:"m,omitempty" lockstep:"readonly"`
	S struct{ X int }    `json:"s,omitempty" lockstep:"readonly"`
	I any                `json:"i,omitempty" lockstep:"readonly"`
	T metav1.Time        `json:"t,omitempty" lockstep:"readonly"`
	Q resource.Quantity  `json:"q,omitempty" lockstep:"readonly"`
	R json.RawMessage    `json:"r,omitempty" lockstep:"readonly"`
	O intstr.IntOrString `json:"o,omitempty" lockstep:"readonly"`
}

func TestZeroValuesAreAbsent(t *testing.T) {
	p, err := For[zeroes]()
	require.NoError(t, err)
	absent := zeroes{B: []byte{}, M: map[string]int{}, I: map[string]any(nil), Q: resource.MustParse("0Gi"), R: json.RawMessage(" null ")}
	assert.Empty(t, p.ValidateCreate(&absent))
	assert.Empty(t, p.ValidateUpdate(&zeroes{}, &absent))

	present := zeroes{
		U: 1, F: 0.5, A: [2]int{0, 1}, B: []byte{0}, M: map[string]int{"": 0}, S: struct{ X int }{1}, I: "",
		T: metav1.Now(), Q: resource.MustParse("1m"), R: json.RawMessage(`0`), O: intstr.FromString(""),
	}
	want := []string{"u readonly", "f readonly", "a readonly", "b readonly", "m readonly", "s readonly", "i readonly", "t readonly", "q readonly", "r readonly", "o readonly"}
	assert.Equal(t, want, describe(p.ValidateCreate(&present)))
	assert.Equal(t, want, describe(p.ValidateUpdate(&zeroes{}, &present)))
	assert.Equal(t, want, describe(p.ValidateUpdate(&present, &zeroes{})))
}

type equalByValue struct{ N int }

func (e equalByValue) Equal(o equalByValue) bool { return e.N%10 == o.N%10 }

type equalByPointer struct{ N int }

func (e *equalByPointer) Equal(o *equalByPointer) bool { return o != nil && e.N%10 == o.N%10 }

type equalOther struct{ N int }

func (e equalOther) Equal(o int) bool { return e.N == o }

type equalTwoResults struct{ N int }

func (e equalTwoResults) Equal(o equalTwoResults) (bool, error) { return true, nil }

func TestEqualMethod(t *testing.T) {
	for _, tt := range []struct {
		t      reflect.Type
		ok     bool
		argPtr bool
	}{
		{reflect.TypeFor[equalByValue](), true, false},
		{reflect.TypeFor[equalByPointer](), true, true},
		{reflect.TypeFor[equalOther](), false, false},
		{reflect.TypeFor[equalTwoResults](), false, false},
		{reflect.TypeFor[leaf](), false, false},
	} {
		_, argPtr, ok := equalMethod(tt.t)
		assert.Equal(t, tt.ok, ok, tt.t.String())
		assert.Equal(t, tt.argPtr, argPtr, tt.t.String())
	}

	type holder struct {
		V equalByValue   `json:"v" lockstep:"createonly"`
		P equalByPointer `json:"p" lockstep:"createonly"`
		O equalOther     `json:"o" lockstep:"createonly"`
	}
	// Equal decides when the fields differ; other types compare by field.
	assert.Empty(t, ValidateUpdate(&holder{V: equalByValue{1}, P: equalByPointer{2}}, &holder{V: equalByValue{11}, P: equalByPointer{12}}))
	assert.Equal(t, []string{"v changed", "p changed", "o changed"},
		describe(ValidateUpdate(&holder{V: equalByValue{1}, P: equalByPointer{2}, O: equalOther{1}}, &holder{V: equalByValue{2}, P: equalByPointer{3}, O: equalOther{2}})))
}
