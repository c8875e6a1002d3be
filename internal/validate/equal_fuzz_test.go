package validate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"math/rand"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/randfill"
	"sigs.k8s.io/randfill/bytesource"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/test/fuzzrun"
)

// The differential test of the engine's equality and of the field
// policies built on it, against k8s.io/apimachinery's equality.Semantic
// and reflect.DeepEqual, on the tagged API types.
//
// The domain: objects as they reach a check, decoded from JSON. Within it
// the engine compares by JSON meaning, so its equality is
// equality.Semantic.DeepEqual with one addition: raw JSON
// (runtime.RawExtension) is compared by the value it holds, not by its
// bytes (key order, spacing and number spelling aside). And:
//   - values that reflect.DeepEqual calls equal, the engine does too;
//   - ValidateUpdate reports exactly the rule paths whose old and new
//     values differ by that equality (absent values being zero values);
//   - ValidateCreate reports exactly the read-only rule paths whose value
//     is not absent.
//
// Objects come from randfill driven by the input, with strings, numbers,
// times and raw JSON from small sets so that two objects often share
// values; the second object of a pair is the first with a part filled
// again, or with its raw JSON respelled, or another object altogether.

// apiTypes are the tagged API types, each as a new pointer.
var apiTypes = []func() any{
	func() any { return &v1alpha1.ServiceInstance{} },
	func() any { return &v1alpha1.ServiceBinding{} },
	func() any { return &v1alpha1.ServiceBroker{} },
	func() any { return &v1alpha1.BrokerOperation{} },
	func() any { return &v1alpha1.ServiceOffering{} },
	func() any { return &v1alpha1.ServicePlan{} },
}

var equalTarget = fuzzrun.Target{
	Name:   "FuzzEqualAPITypes",
	Inputs: 1000,
}

func init() {
	// A seed per type and kind of pair, and real objects: the examples.
	for typ := range apiTypes {
		for pair := range 4 {
			equalTarget.Seeds = append(equalTarget.Seeds, [][]byte{{byte(typ), byte(pair), 7, 1, 42, 3, 9, 250, 13, 77, 5, 0, 128, 64, 31}})
		}
	}
}

func FuzzEqualAPITypes(f *testing.F) {
	fuzzrun.Add(f, equalTarget)
	f.Fuzz(func(t *testing.T, in []byte) { checkEqual(t, in) })
}

func TestEqualAgreesWithSemanticDeepEqual(t *testing.T) {
	fuzzrun.Run(t, equalTarget, func(t *testing.T, in [][]byte) { checkEqual(t, in[0]) })
}

// rawSpellings are raw JSON documents; each line spells one value in
// several ways.
var rawSpellings = [][]string{
	{`null`},
	{`{}`, ` { } `},
	{`{"a":1}`, `{"a":1.0}`, `{ "a" : 10e-1 }`},
	{`{"a":1,"b":[true,null]}`, `{"b":[true,null],"a":1}`, `{"b":[ true, null ],"a":1e0}`},
	{`{"a":2}`},
	{`[1,"x"]`, `[1.0, "x"]`},
	{`{"n":12345678901234567890}`, `{"n":1234567890123456789e1}`},
	{`{"n":12345678901234567891}`},
	{`"s"`},
}

var (
	genSmallStrings = []string{"", "a", "b", "db"}
	genTimes        = []int64{0, 3600, 7200}
)

// equalFiller fills API objects from a fuzz input; r draws from the same
// input.
func equalFiller(data []byte) (*randfill.Filler, *rand.Rand) {
	src := bytesource.New(data)
	return randfill.New().RandSource(src).NilChance(0.3).NumElements(0, 2).MaxDepth(8).Funcs(
		func(s *string, c randfill.Continue) { *s = genSmallStrings[c.Intn(len(genSmallStrings))] },
		func(n *int64, c randfill.Continue) { *n = int64(c.Intn(3)) },
		func(n *int32, c randfill.Continue) { *n = int32(c.Intn(3)) },
		func(n *int, c randfill.Continue) { *n = c.Intn(3) },
		func(tm *metav1.Time, c randfill.Continue) {
			*tm = metav1.NewTime(time.Unix(genTimes[c.Intn(len(genTimes))], 0).UTC())
		},
		func(r *runtime.RawExtension, c randfill.Continue) {
			spellings := rawSpellings[c.Intn(len(rawSpellings))]
			*r = runtime.RawExtension{Raw: []byte(spellings[c.Intn(len(spellings))])}
		},
		func(f *metav1.FieldsV1, c randfill.Continue) { f.Raw = []byte(`{"f:spec":{}}`) },
		func(m *metav1.ObjectMeta, c randfill.Continue) {
			m.Name = genSmallStrings[c.Intn(len(genSmallStrings))]
			if c.Bool() {
				m.Labels = map[string]string{"a": genSmallStrings[c.Intn(len(genSmallStrings))]}
			}
			m.Generation = int64(c.Intn(2))
		},
	), rand.New(src)
}

func checkEqual(t *testing.T, in []byte) {
	if len(in) < 2 {
		in = append(in, 0, 0)
	}
	newObj := apiTypes[int(in[0])%len(apiTypes)]
	pairKind := int(in[1]) % 4
	f, r := equalFiller(in[2:])

	a := newObj()
	f.Fill(a)
	b := newObj()
	switch pairKind {
	case 0: // the same object
		b = roundTripAPI(t, a, newObj)
	case 1: // a part filled again
		b = roundTripAPI(t, a, newObj)
		refillPart(reflect.ValueOf(b).Elem(), f, r, 0)
	case 2: // raw JSON respelled, and maybe a part filled again
		b = roundTripAPI(t, a, newObj)
		respell(reflect.ValueOf(b).Elem(), r)
		if r.Intn(2) == 0 {
			refillPart(reflect.ValueOf(b).Elem(), f, r, 0)
		}
	default: // another object
		f.Fill(b)
	}
	// The domain: objects decoded from JSON.
	a, b = roundTripAPI(t, a, newObj), roundTripAPI(t, b, newObj)

	typ := reflect.TypeOf(a).Elem()
	got := engineEqual(reflect.ValueOf(a).Elem(), reflect.ValueOf(b).Elem())
	want := referenceEqual(a, b)
	if got != want {
		t.Fatalf("%s: the engine says equal=%v, Semantic.DeepEqual (raw JSON by value) %v\na: %s\nb: %s", typ.Name(), got, want, jsonOf(a), jsonOf(b))
	}
	if reflect.DeepEqual(a, b) && !got {
		t.Fatalf("%s: reflect.DeepEqual says equal, the engine not\na: %s\nb: %s", typ.Name(), jsonOf(a), jsonOf(b))
	}

	p, err := Compile(reflect.TypeOf(a))
	if err != nil {
		t.Fatal(err)
	}
	var wantUpdate, wantCreate []string
	for _, r := range p.Rules() {
		va, vb := valueAt(reflect.ValueOf(a).Elem(), r.Path), valueAt(reflect.ValueOf(b).Elem(), r.Path)
		if !referenceEqual(va.Interface(), vb.Interface()) {
			wantUpdate = append(wantUpdate, r.Path)
		}
		if r.Kind == ReadOnly && !referenceEqual(vb.Interface(), reflect.Zero(vb.Type()).Interface()) {
			wantCreate = append(wantCreate, r.Path)
		}
	}
	if gotUpdate := errorPaths(p.ValidateUpdate(a, b)); !slices.Equal(gotUpdate, sorted(wantUpdate)) {
		t.Fatalf("%s: ValidateUpdate reports %v, the reference %v\na: %s\nb: %s", typ.Name(), gotUpdate, sorted(wantUpdate), jsonOf(a), jsonOf(b))
	}
	if gotCreate := errorPaths(p.ValidateCreate(b)); !slices.Equal(gotCreate, sorted(wantCreate)) {
		t.Fatalf("%s: ValidateCreate reports %v, the reference %v\nobject: %s", typ.Name(), gotCreate, sorted(wantCreate), jsonOf(b))
	}
}

func engineEqual(a, b reflect.Value) bool {
	c := getChecker()
	defer putChecker(c)
	return c.equal(eqInfoFor(a.Type()), a, b, 0)
}

// semanticByValue is equality.Semantic with raw JSON compared by value.
var semanticByValue = func() conversion.Equalities {
	e := equality.Semantic.Copy()
	if err := e.AddFunc(func(a, b runtime.RawExtension) bool { return canonicalJSON(a.Raw) == canonicalJSON(b.Raw) }); err != nil {
		panic(err)
	}
	return e
}()

func referenceEqual(a, b any) bool { return semanticByValue.DeepEqual(a, b) }

// canonicalJSON writes a JSON document with sorted keys and numbers as
// exact fractions; empty is null.
func canonicalJSON(raw []byte) string {
	if len(bytes.TrimSpace(raw)) == 0 {
		return "null"
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return "invalid " + string(raw)
	}
	out, err := json.Marshal(exactNumbers(v))
	if err != nil {
		return "invalid " + string(raw)
	}
	return string(out)
}

func exactNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		r, ok := new(big.Rat).SetString(string(x))
		if !ok {
			return "number " + string(x)
		}
		return "number " + r.RatString()
	case string:
		return "string " + x
	case []any:
		for i := range x {
			x[i] = exactNumbers(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = exactNumbers(x[k])
		}
	}
	return v
}

// valueAt follows a rule path of JSON names through structs and pointers;
// a nil pointer on the way is the zero value of the field.
func valueAt(v reflect.Value, path string) reflect.Value {
	for _, name := range strings.Split(path, ".") {
		for v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return reflect.Zero(v.Type().Elem())
			}
			v = v.Elem()
		}
		field, found := fieldNamed(v, name)
		if !found {
			panic(fmt.Sprintf("no field %q in %s", name, v.Type()))
		}
		v = field
	}
	return v
}

// fieldNamed is the field of struct v with JSON name name, looking into
// the structs whose fields are promoted (inline).
func fieldNamed(v reflect.Value, name string) (reflect.Value, bool) {
	for i := range v.NumField() {
		sf := v.Type().Field(i)
		if _, ok := promotes(sf); ok && v.Field(i).Kind() == reflect.Struct {
			if f, found := fieldNamed(v.Field(i), name); found {
				return f, true
			}
			continue
		}
		if tag, _, _ := strings.Cut(sf.Tag.Get("json"), ","); tag == name {
			return v.Field(i), true
		}
	}
	return reflect.Value{}, false
}

var apiPackage = reflect.TypeFor[v1alpha1.ServiceInstance]().PkgPath()

// refillPart fills a random part of v, a struct, again.
func refillPart(v reflect.Value, f *randfill.Filler, r *rand.Rand, depth int) {
	var fields []reflect.Value
	for i := range v.NumField() {
		if v.Type().Field(i).IsExported() {
			fields = append(fields, v.Field(i))
		}
	}
	if len(fields) == 0 {
		return
	}
	field := fields[r.Intn(len(fields))]
	target := field
	for target.Kind() == reflect.Pointer && !target.IsNil() {
		target = target.Elem()
	}
	// Descend into the API's own structs; others are filled whole.
	if target.Kind() == reflect.Struct && target.Type().PkgPath() == apiPackage && depth < 3 && r.Intn(3) > 0 {
		refillPart(target, f, r, depth+1)
		return
	}
	f.Fill(field.Addr().Interface())
}

// respell writes every raw JSON value in v another way.
func respell(v reflect.Value, r *rand.Rand) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			respell(v.Elem(), r)
		}
	case reflect.Struct:
		if raw, ok := v.Addr().Interface().(*runtime.RawExtension); ok {
			for _, spellings := range rawSpellings {
				if slices.Contains(spellings, string(raw.Raw)) {
					raw.Raw = []byte(spellings[r.Intn(len(spellings))])
				}
			}
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				respell(v.Field(i), r)
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			respell(v.Index(i), r)
		}
	}
}

func roundTripAPI(t *testing.T, obj any, newObj func() any) any {
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatalf("marshal %T: %v", obj, err)
	}
	out := newObj()
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("unmarshal %s: %v", b, err)
	}
	return out
}

func jsonOf(obj any) string {
	b, _ := json.Marshal(obj)
	return string(b)
}

func errorPaths(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Field)
	}
	return sorted(out)
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	sort.Strings(s)
	return slices.Compact(s)
}
