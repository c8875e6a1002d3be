package admission

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsjson "sigs.k8s.io/json"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/test/fuzzrun"
)

// The differential test of the member splitter (members, split, meta and
// the handler's decode): what it finds and decodes is what encoding/json
// finds, and what the API machinery's decoder (sigs.k8s.io/json,
// case-sensitive, integers kept) decodes, on the bytes the handler can
// receive.
//
// The domain: req.Object.Raw and req.OldObject.Raw, which
// admission.Webhook decoded as part of the AdmissionReview: so any valid
// JSON value (encoding/json accepts invalid UTF-8 in strings), without the
// whitespace around it, and never the literal null (runtime.RawExtension
// keeps it out). The API server sends only objects it wrote itself; the
// test does not rely on that: duplicate and escaped member names, null
// parts and misspelled names are in the domain.
//
// What must agree, for each input:
//   - members lists the members encoding/json's tokenizer finds, in order,
//     with the same names (decoded), the same raw values, and bounds that
//     cut them out of the input; a value that is not an object is an error;
//   - split finds every member named apiVersion, kind, metadata or spec, in
//     order, however its name is spelled;
//   - the handler's decode of an object's kind, metadata and spec is what
//     the API machinery's decoder makes of the whole object, managedFields
//     and status aside (no check reads them): the same values, or an error
//     from both.

var splitTarget = fuzzrun.Target{
	Name: "FuzzSplit",
	Seeds: [][][]byte{
		{[]byte(`{"apiVersion":"lockstep.dev/v1alpha1","kind":"ServiceInstance","metadata":{"name":"db","namespace":"team","uid":"u","labels":{"a":"b"},"managedFields":[{"manager":"kubectl","operation":"Apply","fieldsV1":{"f:spec":{}}}]},"spec":{"serviceName":"db","planName":"small","parameters":{"storageGB":10}},"status":{"observedGeneration":2}}`)},
		{[]byte(`{"sp\u0065c":{"planName":"small"},"metadata":{"name":"db","deletionTimestamp":"2026-01-01T00:00:00Z"}}`)},
		{[]byte("{\n \"kind\" : \"ServiceInstance\" ,\n \"spec\":{\"parameters\":{\"a\":[1,{\"b\":\"}\\\"]\"}]}} }")},
		{[]byte(`{"metadata":{"managedFields":[],"name":"x"},"spec":{}}`)},
		{[]byte(`{"Spec":{"planName":"big"},"spec":{"planName":"small"},"status":{"bad":`)}, // not JSON: drives the generator
		{[]byte(`[1,2]`)},
		{[]byte(`"spec"`)},
		{[]byte{0x03, 0x11, 0x25, 0x07, 0x40, 0x02, 0x09, 0x13, 0x21, 0x05, 0x0a, 0x33}},
	},
	Inputs: 3000,
}

func FuzzSplit(f *testing.F) {
	fuzzrun.Add(f, splitTarget)
	f.Fuzz(func(t *testing.T, in []byte) { checkSplit(t, admissionRaw(in)) })
}

func TestSplitAgreesWithEncodingJSON(t *testing.T) {
	fuzzrun.Run(t, splitTarget, func(t *testing.T, in [][]byte) { checkSplit(t, admissionRaw(in[0])) })
}

// admissionRaw is in when it is in the domain, else an object generated
// from its bytes.
func admissionRaw(in []byte) []byte {
	trimmed := bytes.TrimSpace(in)
	if json.Valid(trimmed) && len(trimmed) == len(in) && string(in) != "null" {
		return in
	}
	g := &jsonGen{Choices: fuzzrun.Choices{Data: in}}
	g.object(0)
	return g.out.Bytes()
}

func checkSplit(t *testing.T, raw []byte) {
	if !json.Valid(raw) {
		t.Fatalf("the generator made invalid JSON: %q", raw)
	}
	want, isObject := tokenMembers(t, raw)

	var got []member
	err := members(raw, func(m member) bool {
		got = append(got, m)
		return true
	})
	if !isObject {
		if err == nil {
			t.Fatalf("members accepts %q, which is not an object", raw)
		}
		if _, err := split(raw, "object"); err == nil {
			t.Fatalf("split accepts %q, which is not an object", raw)
		}
		return
	}
	if err != nil {
		t.Fatalf("members fails on the object %q: %v", raw, err)
	}
	if len(got) != len(want) {
		t.Fatalf("members finds %d members in %q, encoding/json %d", len(got), raw, len(want))
	}
	for i, m := range got {
		w := want[i]
		if string(m.Value) != string(w.value) {
			t.Fatalf("member %d of %q: value %q, encoding/json %q", i, raw, m.Value, w.value)
		}
		if raw[m.Start] != '"' || string(raw[m.End-len(m.Value):m.End]) != string(m.Value) {
			t.Fatalf("member %d of %q: bounds [%d,%d) do not hold it", i, raw, m.Start, m.End)
		}
		if m.Escaped != bytes.ContainsRune(m.Name, '\\') {
			t.Fatalf("member %d of %q: Escaped is %v for the name %q", i, raw, m.Escaped, m.Name)
		}
		name := string(m.Name)
		if m.Escaped || !utf8.Valid(m.Name) {
			// Not yet its value: decoded, it is what encoding/json reads.
			if err := json.Unmarshal(raw[m.Start:m.Start+len(m.Name)+2], &name); err != nil {
				t.Fatalf("member %d of %q: the name %q does not decode: %v", i, raw, m.Name, err)
			}
		}
		if name != w.name {
			t.Fatalf("member %d of %q: name %q, encoding/json %q", i, raw, name, w.name)
		}
	}

	o, err := split(raw, "object")
	if err != nil {
		t.Fatalf("split fails on the object %q: %v", raw, err)
	}
	for _, p := range []struct {
		name string
		got  []rawRef
	}{{"apiVersion", values(o.apiVersion)}, {"kind", values(o.kind)}, {"metadata", values(o.metadata)}, {"spec", values(o.Spec)}} {
		var values []rawRef
		for _, w := range want {
			if w.name == p.name {
				values = append(values, w.value)
			}
		}
		if !reflect.DeepEqual(values, p.got) {
			t.Fatalf("split of %q: %s is %q, encoding/json finds %q", raw, p.name, p.got, values)
		}
	}
	checkDecode(t, raw, o)
}

// values lists the values of a part in order.
func values(p part) []rawRef {
	if p.last == nil {
		return nil
	}
	return append(slices.Clone(p.earlier), p.last)
}

// tokenMember is a member as encoding/json's tokenizer reads it.
type tokenMember struct {
	name  string
	value rawRef
}

// tokenMembers lists the members of the JSON object in raw with
// encoding/json's Decoder; false when raw is not an object.
func tokenMembers(t *testing.T, raw []byte) ([]tokenMember, bool) {
	d := json.NewDecoder(bytes.NewReader(raw))
	tok, err := d.Token()
	if err != nil {
		t.Fatalf("encoding/json cannot read %q: %v", raw, err)
	}
	if tok != json.Delim('{') {
		return nil, false
	}
	var out []tokenMember
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			t.Fatalf("encoding/json cannot read %q: %v", raw, err)
		}
		var value json.RawMessage
		if err := d.Decode(&value); err != nil {
			t.Fatalf("encoding/json cannot read %q: %v", raw, err)
		}
		out = append(out, tokenMember{name: tok.(string), value: rawRef(value)})
	}
	return out, true
}

// refInstance is what the API machinery's decoder reads of a
// ServiceInstance that the handler's decode reads too: everything but
// metadata.managedFields and the status.
type refInstance struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        refMeta                      `json:"metadata"`
	Spec            v1alpha1.ServiceInstanceSpec `json:"spec"`
}

// refMeta is metav1.ObjectMeta without its managedFields: the field here
// hides the embedded one, and takes any JSON.
type refMeta struct {
	metav1.ObjectMeta `json:",inline"`
	ManagedFields     json.RawMessage `json:"managedFields"`
}

// checkDecode compares the handler's decode of an object with the API
// machinery's decoder on the whole object.
func checkDecode(t *testing.T, raw []byte, o *splitObject) {
	var want refInstance
	wantErr := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, &want)
	h := &validatingHandler[Instance]{
		new:   func() Instance { return &v1alpha1.ServiceInstance{} },
		parts: func(si Instance) (*metav1.ObjectMeta, any) { return &si.ObjectMeta, &si.Spec },
	}
	got, err := h.decode(o, "object")
	if (err == nil) != (wantErr == nil) {
		t.Fatalf("decoding %q: the handler's error is %v, the API machinery's %v", raw, err, wantErr)
	}
	if err != nil {
		return
	}
	if got.TypeMeta != want.TypeMeta {
		t.Fatalf("decoding %q: kind %+v, the API machinery's %+v", raw, got.TypeMeta, want.TypeMeta)
	}
	if !reflect.DeepEqual(got.ObjectMeta, want.Metadata.ObjectMeta) {
		t.Fatalf("decoding %q: metadata\n%#v\nthe API machinery's\n%#v", raw, got.ObjectMeta, want.Metadata.ObjectMeta)
	}
	if !reflect.DeepEqual(got.Spec, want.Spec) {
		t.Fatalf("decoding %q: spec\n%#v\nthe API machinery's\n%#v", raw, got.Spec, want.Spec)
	}
}

// jsonGen writes a JSON object from bytes that are not JSON: members
// named as the handler's parts are, or nearly (escaped, another case,
// repeated), with values of every kind, and whitespace here and there.
type jsonGen struct {
	fuzzrun.Choices
	out bytes.Buffer
}

func (g *jsonGen) space() {
	if g.Pick(4) == 0 {
		g.out.WriteString([]string{" ", "\n", "\t", "\r\n  "}[g.Pick(4)])
	}
}

var (
	genNames = []string{
		`apiVersion`, `kind`, `metadata`, `spec`, `status`, `Spec`, `sp\u0065c`, `\u006detadata`, `k\u0069nd`,
		`apiversion`, `other`, `spec `, `m\u0061nagedFields`,
	}
	genMetaNames = []string{
		`name`, `namespace`, `uid`, `labels`, `annotations`, `finalizers`, `deletionTimestamp`, `generation`,
		`managedFields`, `m\u0061nagedFields`, `ManagedFields`, `resourceVersion`, `creationTimestamp`,
	}
	genSpecNames = []string{
		`serviceName`, `planName`, `brokerName`, `externalID`, `parameters`, `parametersFrom`, `parametersFromGeneration`,
		`PlanName`, `pl\u0061nName`,
	}
	genStringValues = []string{
		`""`, `"db"`, `"small"`, `"lockstep.dev/v1alpha1"`, `"ServiceInstance"`, `"a\"}b"`, `"\u00e9"`, "\"caf\xc3\xa9\"",
		"\"bad\xff\"", `"\ud800"`, `"2026-01-01T00:00:00Z"`, `"{\"spec\":1}"`, `"\\"`,
	}
	genScalars = []string{`null`, `true`, `false`, `0`, `-1`, `1.5e3`, `12345678901234567890`, `1e400`, `[]`, `{}`}
)

func (g *jsonGen) object(depth int) {
	g.out.WriteByte('{')
	n := g.Pick(7)
	for i := range n {
		if i > 0 {
			g.out.WriteByte(',')
		}
		g.space()
		name := genNames[g.Pick(len(genNames))]
		g.out.WriteString(`"` + name + `"`)
		g.space()
		g.out.WriteByte(':')
		g.space()
		switch strings.Trim(name, " ") {
		case "metadata", `\u006detadata`:
			g.members(genMetaNames, depth)
		case "spec", "Spec", `sp\u0065c`:
			g.members(genSpecNames, depth)
		default:
			g.value(depth)
		}
		g.space()
	}
	g.out.WriteByte('}')
}

// members writes an object whose members have the given names, or a
// scalar now and then.
func (g *jsonGen) members(names []string, depth int) {
	if g.Pick(6) == 0 {
		g.value(depth)
		return
	}
	g.out.WriteByte('{')
	for i := range g.Pick(6) {
		if i > 0 {
			g.out.WriteByte(',')
		}
		g.space()
		g.out.WriteString(`"` + names[g.Pick(len(names))] + `":`)
		g.space()
		g.value(depth + 1)
	}
	g.out.WriteByte('}')
}

func (g *jsonGen) value(depth int) {
	switch k := g.Pick(6); {
	case k == 0 && depth < 4:
		g.out.WriteByte('[')
		for i := range g.Pick(4) {
			if i > 0 {
				g.out.WriteByte(',')
			}
			g.space()
			g.value(depth + 1)
		}
		g.out.WriteByte(']')
	case k == 1 && depth < 4:
		g.members(append(genMetaNames[:3:3], "a", "b"), depth+1)
	case k == 2 || k == 3:
		g.out.WriteString(genStringValues[g.Pick(len(genStringValues))])
	default:
		g.out.WriteString(genScalars[g.Pick(len(genScalars))])
	}
}
