package render

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
	"github.com/lockstep-dev/lockstep/internal/validate/schema"
)

// TestNeverStricterOnNumbers checks values where JSON Schema and the API
// server read numbers differently: what the plan's schema accepts, the
// CRD schema accepts too; and the bounds it keeps still refuse what they
// should.
func TestNeverStricterOnNumbers(t *testing.T) {
	for _, tc := range []struct {
		name, schema, value string
		crdRefuses          bool
	}{
		{"integer written with a fraction", `{"type":"object","properties":{"n":{"type":"integer"}}}`, `{"n":4.0}`, false},
		{"integer written with an exponent", `{"type":"object","properties":{"n":{"type":"integer"}}}`, `{"n":1e2}`, false},
		{"enum of integers, value with a fraction", `{"type":"object","properties":{"n":{"type":"integer","enum":[1,2]}}}`, `{"n":2.0}`, false},
		{"fractional minimum on integers", `{"type":"object","properties":{"n":{"type":"integer","minimum":0.5}}}`, `{"n":1}`, false},
		{"fractional minimum refuses below", `{"type":"object","properties":{"n":{"type":"integer","minimum":0.5}}}`, `{"n":0}`, true},
		{"exclusive minimum of draft-07", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"n":{"type":"number","exclusiveMinimum":0}}}`, `{"n":0}`, true},
		{"bound that float64 cannot hold exactly", `{"type":"object","properties":{"n":{"type":"number","maximum":0.1}}}`, `{"n":0.1}`, false},
		{"big integer bound", `{"type":"object","properties":{"n":{"type":"integer","maximum":9007199254740993}}}`, `{"n":9007199254740993}`, false},
		{"multipleOf on numbers is left out", `{"type":"object","properties":{"n":{"type":"number","multipleOf":0.1}}}`, `{"n":0.3}`, false},
		{"multipleOf on integers is kept", `{"type":"object","properties":{"n":{"type":"integer","multipleOf":3}}}`, `{"n":4}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			create := json.RawMessage(tc.schema)
			ps, err := schema.Compile(create, nil, nil)
			require.NoError(t, err)
			brokerRefuses := len(ps.ValidateProvision(&runtime.RawExtension{Raw: []byte(tc.value)}, nil)) > 0
			svc := &osbapi.Service{ID: "n", Name: "numbers", Plans: []osbapi.Plan{{ID: "p", Name: "p",
				Schemas: &osbapi.Schemas{ServiceInstance: &osbapi.ServiceInstanceSchemas{Create: &osbapi.InputParameters{Parameters: create}}}}}}
			crd, _, err := Render("b", svc, Options{})
			require.NoError(t, err)
			params := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["parameters"]
			crdErrs := structuralCheck(t, &params)([]byte(tc.value))
			assert.Equal(t, tc.crdRefuses, crdErrs != "", "CRD: %s", crdErrs)
			if crdErrs != "" {
				assert.True(t, brokerRefuses, "the CRD refuses what the plan's schema accepts")
			}
		})
	}
}
