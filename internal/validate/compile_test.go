package validate

import (
	"reflect"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestCompileRules(t *testing.T) {
	p, err := For[*shapes]()
	require.NoError(t, err)
	assert.Equal(t, reflect.TypeFor[shapes](), p.Type())
	c, r := CreateOnly, ReadOnly
	assert.Equal(t, []Rule{
		{"str", c}, {"int", c}, {"uint", c}, {"bool", c}, {"float", c}, {"ptrStr", c},
		{"ptrStruct", c}, {"ptrStruct.sec", r},
		{"walked.id", c}, {"walked.sec", r},
		{"nested.id", c}, {"nested.sec", r},
		{"strs", c},
		{"leaves[*].id", c}, {"leaves[*].sec", r},
		{"leafPtrs[*].id", c}, {"leafPtrs[*].sec", r},
		{"arr[*].id", c}, {"arr[*].sec", r},
		{"strMap", c},
		{"leafMap[*].id", c}, {"leafMap[*].sec", r},
		{"intMap[*].id", c}, {"intMap[*].sec", r},
		{"raw", c}, {"rawMsg", c}, {"any", c}, {"time", c}, {"qty", c},
		{"ro", r}, {"roStruct", r},
		{"promoted", c}, {"deepID", c}, {"named.inner", c}, {"inlined", c},
	}, p.Rules())
}

func TestCompileCaches(t *testing.T) {
	p1, err := Compile(reflect.TypeFor[shapes]())
	require.NoError(t, err)
	p2, err := For[shapes]()
	require.NoError(t, err)
	p3, err := For[*shapes]()
	require.NoError(t, err)
	assert.Same(t, p1, p2)
	assert.Same(t, p1, p3, "a pointer type shares its struct's policy")

	_, err1 := For[badTag]()
	_, err2 := For[badTag]()
	require.Error(t, err1)
	assert.Same(t, err1, err2, "errors are cached too")
}

func TestCompileConcurrently(t *testing.T) {
	type fresh struct {
		A string `json:"a" lockstep:"createonly"`
		B []leaf `json:"b"`
	}
	const n = 16
	got := make([]*Policy, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			p, err := For[fresh]()
			assert.NoError(t, err)
			got[i] = p
			assert.Equal(t, []string{"a changed"}, describe(p.ValidateUpdate(fresh{A: "x"}, fresh{A: "y"})))
		})
	}
	wg.Wait()
	for _, p := range got {
		assert.Same(t, got[0], p)
	}
}

type tagOnIgnored struct {
	A string `json:"-" lockstep:"readonly"`
}

type tagOnUnexported struct {
	a string `lockstep:"readonly"`
}

type tagOnEmbedded struct {
	leaf `lockstep:"createonly"`
}

type tagOnChan struct {
	C chan int `json:"c" lockstep:"readonly"`
}

type emptyTag struct {
	A string `json:"a" lockstep:""`
}

type tagWithOptions struct {
	A string `json:"a" lockstep:"createonly,omitempty"`
}

type badTagDeep struct {
	Items []struct {
		Inner *struct {
			X string `json:"x" lockstep:"write-once"`
		} `json:"inner"`
	} `json:"items"`
}

type badTagInEmbedded struct {
	Embedded
}

type Embedded struct {
	X string `json:"x" lockstep:"Readonly"`
}

type structKey struct{ A, B string }

type structKeyedMap struct {
	M map[structKey]leaf `json:"m"`
}

type twoBadTags struct {
	A string `json:"a" lockstep:"one"`
	B string `json:"b" lockstep:"two"`
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name string
		t    reflect.Type
		want []string
	}{
		{"nil type", nil, []string{"nil type"}},
		{"not a struct", reflect.TypeFor[int](), []string{"int: it is not a struct or a pointer to a struct"}},
		{"pointer to pointer", reflect.TypeFor[**shapes](), []string{"it is not a struct or a pointer to a struct"}},
		{"map", reflect.TypeFor[map[string]leaf](), []string{"it is not a struct"}},
		{"unsafe pointer", reflect.TypeFor[unsafe.Pointer](), []string{"it is not a struct"}},
		{"unknown tag value", reflect.TypeFor[badTag](), []string{`field validate.badTag.A: unknown lockstep tag value "immutable": use "createonly" or "readonly"`}},
		{"empty tag value", reflect.TypeFor[emptyTag](), []string{`unknown lockstep tag value ""`}},
		{"tag with options", reflect.TypeFor[tagWithOptions](), []string{`unknown lockstep tag value "createonly,omitempty"`}},
		{"tag deep inside", reflect.TypeFor[badTagDeep](), []string{`unknown lockstep tag value "write-once"`, ".X:"}},
		{"tag inside an embedded struct", reflect.TypeFor[badTagInEmbedded](), []string{`field validate.Embedded.X: unknown lockstep tag value "Readonly"`}},
		{"tag on a json:\"-\" field", reflect.TypeFor[tagOnIgnored](), []string{`field validate.tagOnIgnored.A: a lockstep tag cannot apply here: JSON ignores it`}},
		{"tag on an unexported field", reflect.TypeFor[tagOnUnexported](), []string{"it is unexported"}},
		{"tag on a promoted embedded struct", reflect.TypeFor[tagOnEmbedded](), []string{"its fields are promoted into the parent object"}},
		{"tag on a chan", reflect.TypeFor[tagOnChan](), []string{"its type chan int has no JSON form"}},
		{"map with struct keys holding rules", reflect.TypeFor[structKeyedMap](), []string{"its key type has no order"}},
		{"every bad tag is reported", reflect.TypeFor[twoBadTags](), []string{`"one"`, `"two"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Compile(tt.t)
			require.Error(t, err)
			assert.Nil(t, p)
			for _, want := range tt.want {
				assert.Contains(t, err.Error(), want)
			}
		})
	}
}

func TestCompileTagsInsideTaggedValuesAreChecked(t *testing.T) {
	type inner struct {
		X string `json:"x" lockstep:"sometimes"`
	}
	type outer struct {
		RO inner `json:"ro" lockstep:"readonly"`
	}
	_, err := For[outer]()
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"sometimes"`)
}

func TestCompileLeafTypesAreNotWalked(t *testing.T) {
	// Tags inside a type with its own JSON form describe nothing in the
	// JSON, so they are not rules.
	type outer struct {
		T selfMarshalled `json:"t"`
	}
	p, err := For[outer]()
	require.NoError(t, err)
	assert.Empty(t, p.Rules())

	p, err = For[selfMarshalled]()
	require.NoError(t, err)
	assert.Empty(t, p.Rules())
	assert.Empty(t, p.ValidateUpdate(selfMarshalled{X: "a"}, selfMarshalled{X: "b"}))
}

type selfMarshalled struct {
	X string `json:"x" lockstep:"createonly"`
}

func (s selfMarshalled) MarshalJSON() ([]byte, error) { return []byte(`"fixed"`), nil }

// Recursive types: through a pointer, a slice, a map, and mutually.
type node struct {
	Key      string           `json:"key" lockstep:"createonly"`
	Note     string           `json:"note,omitempty"`
	Next     *node            `json:"next,omitempty"`
	Children []node           `json:"children,omitempty"`
	ByName   map[string]*node `json:"byName,omitempty"`
	Other    *other           `json:"other,omitempty"`
}

type other struct {
	Back *node  `json:"back,omitempty"`
	Own  string `json:"own,omitempty" lockstep:"readonly"`
}

type plainList struct {
	Value string     `json:"value"`
	Next  *plainList `json:"next"`
}

type selfEmbedding struct {
	*selfEmbedding
	ID string `json:"id" lockstep:"createonly"`
}

func TestCompileRecursiveTypes(t *testing.T) {
	p, err := For[node]()
	require.NoError(t, err)
	c, r := CreateOnly, ReadOnly
	assert.Equal(t, []Rule{{"key", c}, {"other.own", r}}, p.Rules(), "a recursive type's rules are listed once")

	old := &node{Key: "root", Next: &node{Key: "a", Next: &node{Key: "b"}},
		Children: []node{{Key: "c0", Children: []node{{Key: "c00"}}}},
		ByName:   map[string]*node{"x": {Key: "x", Other: &other{Back: &node{Key: "deep"}}}}}
	new := &node{Key: "root", Next: &node{Key: "a", Next: &node{Key: "B"}},
		Children: []node{{Key: "c0", Children: []node{{Key: "C00"}, {Key: "new"}}}},
		ByName:   map[string]*node{"x": {Key: "x", Other: &other{Back: &node{Key: "DEEP"}, Own: "mine"}}}}
	assert.Equal(t, []string{
		"next.next.key changed",
		"children[0].children[0].key changed",
		"byName[x].other.back.key changed",
		"byName[x].other.own readonly",
	}, describe(p.ValidateUpdate(old, new)))

	for _, path := range []string{"key", "next.next.next.key", "children[3].children[0].key", "byName[a.b].next.key", "other.back.other.back.key"} {
		k, ok := p.RuleFor(path)
		assert.True(t, ok, path)
		assert.Equal(t, CreateOnly, k, path)
	}

	pl, err := For[plainList]()
	require.NoError(t, err)
	assert.Empty(t, pl.Rules())
	assert.Empty(t, pl.ValidateUpdate(&plainList{Next: &plainList{Value: "a"}}, &plainList{}))

	ps, err := For[selfEmbedding]()
	require.NoError(t, err)
	assert.Equal(t, []Rule{{"id", c}}, ps.Rules())
}

func TestCyclicValueDoesNotLoopForever(t *testing.T) {
	p, err := For[node]()
	require.NoError(t, err)
	a := &node{Key: "a"}
	a.Next = a
	b := &node{Key: "a"}
	b.Next = b
	errs := p.ValidateUpdate(a, b)
	require.Len(t, errs, 1)
	assert.Equal(t, field.ErrorTypeInternal, errs[0].Type)
	assert.Equal(t, "next", errs[0].Field)
	assert.Contains(t, errs[0].Detail, "nested more than 1000 levels deep")
	assert.Empty(t, p.ValidateUpdate(a, a), "the same memory on both sides is not walked")

	c := &node{Key: "c"}
	c.Next = c
	d := &node{Key: "d"}
	d.Next = d
	errs = p.ValidateUpdate(&node{Next: c}, &node{Next: d})
	require.NotEmpty(t, errs)
	assert.Equal(t, "next.key", errs[0].Field)
	assert.Less(t, len(errs[0].Error()), 400)
}

func TestRuleFor(t *testing.T) {
	p, err := For[shapes]()
	require.NoError(t, err)
	tests := []struct {
		path string
		kind Kind
		ok   bool
	}{
		{"str", CreateOnly, true},
		{"ro", ReadOnly, true},
		{"leaves[12].id", CreateOnly, true},
		{"leaves[12].sec", ReadOnly, true},
		{"leafMap[with.dots].id", CreateOnly, true},
		{"leafMap[with]brackets].sec", ReadOnly, true},
		{"ptrStruct.sec", ReadOnly, true},
		{"ptrStruct", CreateOnly, true},
		{"deepID", CreateOnly, true},
		{"inlined", CreateOnly, true},
		{"named.inner", CreateOnly, true},
		{"free", 0, false},
		{"leaves", 0, false},
		{"leaves[x].id", 0, false},
		{"leaves[1]", 0, false},
		{"leaves.id", 0, false},
		{"strx", 0, false},
		{"", 0, false},
		{"hidden", 0, false},
		{"Hidden", 0, false},
	}
	for _, tt := range tests {
		k, ok := p.RuleFor(tt.path)
		assert.Equal(t, tt.ok, ok, tt.path)
		assert.Equal(t, tt.kind, k, tt.path)
	}
}

// Fields with the same JSON name: the shallowest wins, as in encoding/json.
type shadowInner struct {
	ID   string `json:"id" lockstep:"readonly"`
	Kept string `json:"kept" lockstep:"readonly"`
}

type shadowing struct {
	shadowInner
	ID string `json:"id" lockstep:"createonly"`
}

type ambiguousA struct {
	X string `lockstep:"createonly"`
}

type ambiguousB struct {
	X string `lockstep:"readonly"`
}

type ambiguous struct {
	ambiguousA
	ambiguousB
}

type goNames struct {
	NoTag     string `lockstep:"createonly"`
	OnlyOpts  string `json:",omitempty" lockstep:"createonly"`
	DashComma string `json:"-," lockstep:"createonly"`
}

func TestCompileJSONNames(t *testing.T) {
	p, err := For[shadowing]()
	require.NoError(t, err)
	assert.Equal(t, []Rule{{"kept", ReadOnly}, {"id", CreateOnly}}, p.Rules())

	p, err = For[ambiguous]()
	require.NoError(t, err)
	assert.Empty(t, p.Rules(), "encoding/json drops ambiguous fields, and so do policies")

	p, err = For[goNames]()
	require.NoError(t, err)
	assert.Equal(t, []Rule{{"NoTag", CreateOnly}, {"OnlyOpts", CreateOnly}, {"-", CreateOnly}}, p.Rules())
}

func TestKindString(t *testing.T) {
	assert.Equal(t, "create-only", CreateOnly.String())
	assert.Equal(t, "read-only", ReadOnly.String())
	assert.Equal(t, "Kind(9)", Kind(9).String())
}
