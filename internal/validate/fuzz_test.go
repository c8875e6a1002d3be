package validate

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/lockstep-dev/lockstep/test/fuzzrun"
)

// fuzzObj is what FuzzValidateUpdate decodes its inputs into: every shape
// that JSON can fill, including a recursive type.
type fuzzObj struct {
	Spec   fuzzSpec   `json:"spec"`
	Status fuzzStatus `json:"status,omitempty"`
}

type fuzzSpec struct {
	Name     string                `json:"name,omitempty" lockstep:"createonly"`
	Count    *int64                `json:"count,omitempty" lockstep:"createonly"`
	Ratio    float64               `json:"ratio,omitempty" lockstep:"createonly"`
	Flag     bool                  `json:"flag,omitempty" lockstep:"createonly"`
	Free     string                `json:"free,omitempty"`
	Tags     []string              `json:"tags,omitempty" lockstep:"createonly"`
	Items    []fuzzItem            `json:"items,omitempty"`
	ItemPtrs []*fuzzItem           `json:"itemPtrs,omitempty"`
	ByName   map[string]fuzzItem   `json:"byName,omitempty"`
	ByNum    map[int]*fuzzItem     `json:"byNum,omitempty"`
	Labels   map[string]string     `json:"labels,omitempty" lockstep:"createonly"`
	Params   *runtime.RawExtension `json:"params,omitempty" lockstep:"createonly"`
	Raw      json.RawMessage       `json:"raw,omitempty" lockstep:"createonly"`
	Any      any                   `json:"any,omitempty" lockstep:"createonly"`
	Size     *resource.Quantity    `json:"size,omitempty" lockstep:"createonly"`
	Tree     *fuzzNode             `json:"tree,omitempty"`
	Sub      *fuzzItem             `json:"sub,omitempty" lockstep:"createonly"`
	Pair     [2]fuzzItem           `json:"pair"`
	fuzzEmbedded
}

type fuzzEmbedded struct {
	Zone string `json:"zone,omitempty" lockstep:"createonly"`
}

type fuzzItem struct {
	ID     string              `json:"id,omitempty" lockstep:"createonly"`
	Note   string              `json:"note,omitempty"`
	Secret string              `json:"secret,omitempty" lockstep:"readonly"`
	Nested map[string][]string `json:"nested,omitempty" lockstep:"createonly"`
}

type fuzzNode struct {
	Key      string               `json:"key,omitempty" lockstep:"createonly"`
	Children []fuzzNode           `json:"children,omitempty"`
	Next     map[string]*fuzzNode `json:"next,omitempty"`
	Seen     int                  `json:"seen,omitempty" lockstep:"readonly"`
}

type fuzzStatus struct {
	Phase string   `json:"phase,omitempty" lockstep:"readonly"`
	Seen  []string `json:"seen,omitempty" lockstep:"readonly"`
	Item  fuzzItem `json:"item,omitempty"`
}

var validateUpdateTarget = fuzzrun.Target{
	Name: "FuzzValidateUpdate",
	Seeds: [][][]byte{
		{[]byte(`{"spec":{"name":"a"}}`), []byte(`{"spec":{"name":"b"}}`)},
		{[]byte(`{"spec":{"items":[{"id":"a","secret":"s"}],"byName":{"k":{"id":"x"}}}}`),
			[]byte(`{"spec":{"items":[{"id":"b"},{"id":"c","secret":"t"}],"byName":{"k":{"id":"y"},"n":{"secret":"z"}}}}`)},
		{[]byte(`{"spec":{"params":{"a":1,"b":[1,2]},"raw":[1.0,"x"],"any":{"k":[null,true]}}}`),
			[]byte(`{"spec":{"params":{"b":[1,2.0],"a":10e-1},"raw":[1,"x"],"any":{"k":[null,true]}}}`)},
		{[]byte(`{"spec":{"tree":{"key":"r","children":[{"key":"c","next":{"x":{"key":"d"}}}]}}}`),
			[]byte(`{"spec":{"tree":{"key":"r","children":[{"key":"C","next":{"x":{"key":"D","seen":1}}}]}}}`)},
		{[]byte(`{"spec":{"size":"1Gi","count":3,"ratio":0.5,"byNum":{"2":{"id":"a"},"10":null}}}`),
			[]byte(`{"spec":{"size":"1024Mi","count":0,"byNum":{"2":{"id":"b"},"10":{"id":"c"}}}}`)},
		{[]byte(`{"spec":{"pair":[{"id":"a"},{}],"zone":"z","sub":{"nested":{"a":["b"]}}},"status":{"phase":"Ready"}}`),
			[]byte(`{"spec":{"pair":[{},{"secret":"s"}],"sub":{"nested":{"a":[]}}},"status":{"phase":"Failed","seen":[]}}`)},
		// Bytes that are not JSON drive the generator.
		{[]byte("\x06\x03\x01\x02\x03\x01\x02\x00\x01\x02\x09\x01\x01\x02\x03\x14\x02\x0b\x03\x01\x02"),
			[]byte("\x06\x03\x02\x02\x03\x01\x02\x00\x01\x01\x09\x01\x02\x02\x03\x14\x01\x0c\x04\x10\x01\x01\x01\x02")},
	},
	Inputs: 400,
}

func FuzzValidateUpdate(f *testing.F) {
	fuzzrun.Add(f, validateUpdateTarget)
	p, err := For[*fuzzObj]()
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, a, b []byte) { fuzzUpdate(t, p, a, b) })
}

func TestValidateUpdateRandomized(t *testing.T) {
	p, err := For[*fuzzObj]()
	require.NoError(t, err)
	fuzzrun.Run(t, validateUpdateTarget, func(t *testing.T, in [][]byte) { fuzzUpdate(t, p, in[0], in[1]) })
}

// fuzzUpdate checks the invariants of FuzzValidateUpdate on one input.
func fuzzUpdate(t *testing.T, p *Policy, a, b []byte) {
	// Inputs that are JSON are decoded; other bytes drive a generator,
	// so that every input makes objects worth comparing.
	old, new := decodeOrGenerate(a), decodeOrGenerate(b)
	// Comparing an object with itself, or with its JSON round trip,
	// finds nothing.
	for _, x := range []*fuzzObj{&old, &new} {
		if errs := p.ValidateUpdate(x, x); len(errs) != 0 {
			t.Fatalf("an object compared with itself: %v", errs)
		}
		y := roundTrip(t, x)
		if errs := p.ValidateUpdate(x, y); len(errs) != 0 {
			t.Fatalf("an object compared with its JSON round trip: %v", errs)
		}
		if errs := p.ValidateUpdate(y, x); len(errs) != 0 {
			t.Fatalf("a JSON round trip compared with its object: %v", errs)
		}
	}

	// b also serves as a patch on a: decoding it over a copy of old
	// changes only the fields it names, like a small edit.
	patched := roundTrip(t, &old)
	if json.Unmarshal(b, patched) != nil {
		patched = roundTrip(t, &old)
		(&gen{data: b}).edit(patched)
	}
	for _, n := range []*fuzzObj{&new, patched} {
		// Errors name paths that the policy has, with the rule it has
		// there; a check gives the same answer twice; an independent
		// oracle agrees on the fields it knows.
		errs := p.ValidateUpdate(&old, n)
		checkErrors(t, p, errs, false)
		if again := p.ValidateUpdate(&old, n); !reflect.DeepEqual(describe(errs), describe(again)) {
			t.Fatalf("two checks of the same update differ:\n%v\n%v", errs, again)
		}
		checkOracle(t, &old, n, errs)
		checkErrors(t, p, p.ValidateCreate(n), true)

		// An update that changes nothing in JSON is clean whatever the
		// Go values look like.
		if jsonEqual(t, &old, n) && len(errs) != 0 {
			t.Fatalf("an update with equal JSON reported: %v", errs)
		}
	}
}

// checkOracle recomputes, by plain Go code, the violations of a few fields
// and checks that the engine reports exactly those at these paths.
func checkOracle(t *testing.T, old, new *fuzzObj, errs field.ErrorList) {
	t.Helper()
	want := map[string]bool{}
	covered := map[string]bool{}
	expect := func(path string, violated bool) {
		covered[path] = true
		if violated {
			want[path] = true
		}
	}
	expect("spec.name", old.Spec.Name != new.Spec.Name)
	expect("spec.flag", old.Spec.Flag != new.Spec.Flag)
	expect("spec.zone", old.Spec.Zone != new.Spec.Zone)
	expect("spec.tags", !slices.Equal(old.Spec.Tags, new.Spec.Tags))
	expect("spec.labels", !maps.Equal(old.Spec.Labels, new.Spec.Labels))
	expect("status.phase", old.Status.Phase != new.Status.Phase)
	for i, it := range new.Spec.Items {
		idPath, secretPath := fmt.Sprintf("spec.items[%d].id", i), fmt.Sprintf("spec.items[%d].secret", i)
		if i < len(old.Spec.Items) {
			expect(idPath, old.Spec.Items[i].ID != it.ID)
			expect(secretPath, old.Spec.Items[i].Secret != it.Secret)
		} else {
			expect(idPath, false)
			expect(secretPath, it.Secret != "")
		}
	}
	for k, it := range new.Spec.ByName {
		idPath := "spec.byName[" + k + "].id"
		if strings.ContainsAny(k, "[]") {
			continue // the key is ambiguous in a path
		}
		o, ok := old.Spec.ByName[k]
		expect(idPath, ok && o.ID != it.ID)
	}
	got := map[string]bool{}
	for _, e := range errs {
		if covered[e.Field] {
			got[e.Field] = true
		}
	}
	if !maps.Equal(want, got) {
		t.Fatalf("the engine and the oracle disagree:\nengine: %v\noracle: %v\nerrors: %v", got, want, errs)
	}
}

func roundTrip(t *testing.T, x *fuzzObj) *fuzzObj {
	b, err := json.Marshal(x)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	var y fuzzObj
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("unmarshal %s: %v", b, err)
	}
	return &y
}

func jsonEqual(t *testing.T, a, b *fuzzObj) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	if errA != nil || errB != nil {
		t.Fatalf("marshal: %v, %v", errA, errB)
	}
	return string(ja) == string(jb)
}

// checkErrors asserts that every error is a policy violation at a path the
// policy governs, of the kind the policy has there (read-only only, on
// create).
func checkErrors(t *testing.T, p *Policy, errs field.ErrorList, create bool) {
	t.Helper()
	for _, e := range errs {
		kind, ok := p.RuleFor(e.Field)
		if !ok {
			t.Fatalf("error at %q, a path without a rule: %v", e.Field, e)
		}
		if e.Type != field.ErrorTypeInvalid && e.Type != field.ErrorTypeForbidden {
			t.Fatalf("unexpected error type: %v", e)
		}
		if create && kind != ReadOnly {
			t.Fatalf("create reported a %s field: %v", kind, e)
		}
		what := strings.TrimPrefix(describe(field.ErrorList{e})[0], e.Field+" ")
		if (kind == ReadOnly) != (what == "readonly") || strings.HasPrefix(what, "UNEXPECTED") {
			t.Fatalf("a %s rule reported as %q: %v", kind, what, e)
		}
	}
}

func decodeOrGenerate(data []byte) fuzzObj {
	var x fuzzObj
	if json.Unmarshal(data, &x) == nil {
		return x
	}
	x = fuzzObj{}
	(&gen{data: data}).edit(&x)
	return x
}

// gen turns bytes into edits of a fuzzObj. Values come from small sets, so
// that two objects often share some and differ in others, and raw JSON
// comes in several spellings of the same values.
type gen struct {
	data []byte
}

func (g *gen) next() int {
	if len(g.data) == 0 {
		return 0
	}
	b := g.data[0]
	g.data = g.data[1:]
	return int(b)
}

func (g *gen) pick(n int) int { return g.next() % n }

var (
	genStrings = []string{"", "a", "b", "a]b"}
	genRaw     = []string{``, `null`, `{}`, `{"a":1}`, ` { "a" : 1.0 } `, `{"a":10e-1}`, `{"a":2}`, `[1,"x"]`, `[1.0, "x"]`}
	genAny     = []any{nil, "x", 1.0, true, []any{}, []any{"x"}, map[string]any{"k": []any{1.0}}, map[string]any{"k": []any{2.0}}}
	genSizes   = []string{"0", "1", "1000m", "2", "1Gi", "1024Mi"}
)

func (g *gen) str() string { return genStrings[g.pick(len(genStrings))] }

func (g *gen) strs() []string {
	switch n := g.pick(4); n {
	case 0:
		return nil
	case 1:
		return []string{}
	default:
		out := make([]string, n-1)
		for i := range out {
			out[i] = g.str()
		}
		return out
	}
}

func (g *gen) strMap() map[string]string {
	switch n := g.pick(4); n {
	case 0:
		return nil
	default:
		m := map[string]string{}
		for range n - 1 {
			m[g.str()] = g.str()
		}
		return m
	}
}

func (g *gen) item() fuzzItem {
	it := fuzzItem{ID: g.str(), Note: g.str(), Secret: g.str()}
	if g.pick(3) == 0 {
		it.Nested = map[string][]string{g.str(): g.strs()}
	}
	return it
}

func (g *gen) node(depth int) *fuzzNode {
	if depth > 3 || g.pick(3) == 0 {
		return nil
	}
	n := &fuzzNode{Key: g.str(), Seen: g.pick(2)}
	for range g.pick(3) {
		if c := g.node(depth + 1); c != nil {
			n.Children = append(n.Children, *c)
		}
	}
	if g.pick(2) == 0 {
		n.Next = map[string]*fuzzNode{g.str(): g.node(depth + 1)}
	}
	return n
}

// edit changes the fields of x that the next bytes choose.
func (g *gen) edit(x *fuzzObj) {
	for len(g.data) > 0 {
		s := &x.Spec
		switch g.pick(24) {
		case 0:
			s.Name = g.str()
		case 1:
			if n := g.pick(3); n == 0 {
				s.Count = nil
			} else {
				s.Count = ptr(int64(n - 1))
			}
		case 2:
			s.Ratio = float64(g.pick(3)) / 2
		case 3:
			s.Flag = g.pick(2) == 1
		case 4:
			s.Free = g.str()
		case 5:
			s.Tags = g.strs()
		case 6:
			s.Items = nil
			for range g.pick(4) {
				s.Items = append(s.Items, g.item())
			}
		case 7:
			if len(s.Items) > 0 {
				s.Items[g.pick(len(s.Items))] = g.item()
			}
		case 8:
			s.ItemPtrs = nil
			for range g.pick(3) {
				if g.pick(2) == 0 {
					s.ItemPtrs = append(s.ItemPtrs, nil)
				} else {
					it := g.item()
					s.ItemPtrs = append(s.ItemPtrs, &it)
				}
			}
		case 9:
			if s.ByName == nil || g.pick(4) == 0 {
				s.ByName = map[string]fuzzItem{}
			}
			s.ByName[g.str()] = g.item()
		case 10:
			if s.ByNum == nil || g.pick(4) == 0 {
				s.ByNum = map[int]*fuzzItem{}
			}
			it := g.item()
			s.ByNum[g.pick(12)-1] = &it
		case 11:
			s.Labels = g.strMap()
		case 12:
			if raw := genRaw[g.pick(len(genRaw))]; raw == "" {
				s.Params = nil
			} else {
				s.Params = &runtime.RawExtension{Raw: []byte(raw)}
			}
		case 13:
			s.Raw = json.RawMessage(genRaw[g.pick(len(genRaw))])
		case 14:
			s.Any = genAny[g.pick(len(genAny))]
		case 15:
			if size := genSizes[g.pick(len(genSizes)+1)%len(genSizes)]; g.pick(4) == 0 {
				s.Size = nil
			} else {
				q := resource.MustParse(size)
				s.Size = &q
			}
		case 16:
			s.Tree = g.node(0)
		case 17:
			if g.pick(2) == 0 {
				s.Sub = nil
			} else {
				it := g.item()
				s.Sub = &it
			}
		case 18:
			s.Pair[g.pick(2)] = g.item()
		case 19:
			s.Zone = g.str()
		case 20:
			x.Status.Phase = g.str()
		case 21:
			x.Status.Seen = g.strs()
		case 22:
			x.Status.Item = g.item()
		case 23:
			for k, v := range s.ByName {
				v.ID = g.str()
				s.ByName[k] = v
				break
			}
		}
	}
}
