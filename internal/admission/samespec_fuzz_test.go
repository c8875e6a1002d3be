package admission

import (
	"encoding/json"
	"testing"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/journal"
	"github.com/lockstep-dev/lockstep/test/fuzzrun"
)

// The differential test of sameInstanceSpec, the shortcut the validating
// chain takes on every update, against journal.SameSpec, the definition
// it shortcuts: the same answer for any two specs (fields from small
// sets, parameters spelled several ways).

var sameSpecTarget = fuzzrun.Target{
	Name: "FuzzSameInstanceSpec",
	Seeds: [][][]byte{
		{[]byte{0, 0}},
		{[]byte{4, 4, 1, 4, 5, 2}},
		{[]byte{4, 6, 2, 4, 7, 1}},
		{[]byte{5, 1, 3, 5, 2, 6, 1}},
	},
	Inputs: 3000,
	Dict:   []string{"\x00", "\x01", "\x02", "\x03", "\x04", "\x05", "\x06", "\x07"},
}

func FuzzSameInstanceSpec(f *testing.F) {
	fuzzrun.Add(f, sameSpecTarget)
	f.Fuzz(func(t *testing.T, in []byte) { checkSameSpec(t, in) })
}

func TestSameInstanceSpecRandomized(t *testing.T) {
	fuzzrun.Run(t, sameSpecTarget, func(t *testing.T, in [][]byte) { checkSameSpec(t, in[0]) })
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func checkSameSpec(t *testing.T, in []byte) {
	g := &requestGen{Choices: fuzzrun.Choices{Data: in}}
	var a v1alpha1.ServiceInstanceSpec
	for range g.Pick(4) {
		g.instanceEdit(&a)
	}
	b := *a.DeepCopy()
	switch g.Pick(3) {
	case 0:
		b.Parameters = respelled(b.Parameters)
	case 1:
		for range 1 + g.Pick(3) {
			g.instanceEdit(&b)
		}
	}
	want := journal.SameSpec(a, b)
	for _, got := range []bool{sameInstanceSpec(&a, &b), sameInstanceSpec(&b, &a)} {
		if got != want {
			t.Fatalf("sameInstanceSpec says %v, journal.SameSpec %v\na: %s\nb: %s", got, want, jsonOf(a), jsonOf(b))
		}
	}
}
