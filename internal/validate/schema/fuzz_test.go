package schema

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/lockstep-dev/lockstep/test/fuzzrun"
)

// FuzzValidate feeds any schemas and parameters through every entry point.
// Nothing may panic, every error must sit below spec.parameters and read as
// a message, results must not change between calls, quickValid must never
// accept what the library refuses, and what UpdateParameters returns must
// be a JSON object without the create-only parameters. The seed corpus is
// in testdata/fuzz/FuzzValidate.
var validateTarget = fuzzrun.Target{
	Name:   "FuzzValidate",
	Seeds:  [][][]byte{{[]byte(benchCreate), []byte(benchUpdate), []byte(benchOld), []byte(benchNew)}},
	Inputs: 1000,
}

func FuzzValidate(f *testing.F) {
	fuzzrun.Add(f, validateTarget)
	f.Fuzz(checkValidate)
}

func TestValidateRandomized(t *testing.T) {
	fuzzrun.Run(t, validateTarget, func(t *testing.T, in [][]byte) { checkValidate(t, in[0], in[1], in[2], in[3]) })
}

// checkValidate checks the invariants of FuzzValidate on one input.
func checkValidate(t *testing.T, create, update, oldParams, newParams []byte) {
	s, err := Compile(create, update, create)
	if err != nil {
		require.NotEmpty(t, err.Error())
		s = nil // the plan's checks then only look at the shape
	}
	old, new := &runtime.RawExtension{Raw: oldParams}, &runtime.RawExtension{Raw: newParams}
	check := func(what string, errs field.ErrorList) {
		for _, e := range errs {
			require.True(t, strings.HasPrefix(e.Field, "spec.parameters"), "%s: field %q", what, e.Field)
			require.NotEmpty(t, e.Detail, what)
			require.NotEmpty(t, e.Error(), what)
		}
	}

	provision := s.ValidateProvision(new, paramsPath)
	check("ValidateProvision", provision)
	require.Equal(t, messages(provision), messages(s.ValidateProvision(new, paramsPath)), "deterministic")
	check("ValidateBind", s.ValidateBind(new, paramsPath))
	update1 := s.ValidateUpdate(old, new, paramsPath)
	check("ValidateUpdate", update1)
	require.Equal(t, messages(update1), messages(s.ValidateUpdate(old, new, paramsPath)), "deterministic")

	if s != nil {
		for _, raw := range [][]byte{newParams, oldParams} {
			doc, beyond, err := decodeJSON(raw)
			if err != nil || beyond {
				continue
			}
			for _, c := range []*compiled{s.create, s.update} {
				if c != nil && quickValid(c.schema, doc, 0) {
					require.NoError(t, c.schema.Validate(doc), "quickValid accepted what the library refuses")
				}
			}
		}
	}

	shapeOK := len((*PlanSchemas)(nil).ValidateProvision(new, paramsPath)) == 0
	sent, err := s.UpdateParameters(new)
	require.Equal(t, shapeOK, err == nil, "UpdateParameters fails exactly when the parameters are not an object: %v", err)
	if err != nil {
		return
	}
	var members map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(sent, &members), "%s", sent)
	for _, p := range s.createOnlyPaths() {
		if len(p) == 1 {
			require.NotContains(t, members, p[0].name, "create-only parameters are not sent")
		}
	}
	for _, e := range s.ValidateUpdate(new, new, paramsPath) {
		require.NotContains(t, e.Detail, "create-only parameter", "unchanged parameters keep the create-only rule")
	}
}

// createOnlyPaths are the derived paths of s (none for nil).
func (s *PlanSchemas) createOnlyPaths() []path {
	if s == nil {
		return nil
	}
	return s.createOnly
}
