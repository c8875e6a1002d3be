package marketplace

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
	"github.com/lockstep-dev/lockstep/internal/validate/schema"
)

func TestProblems(t *testing.T) {
	large := fmt.Sprintf(`{"type":"object","description":%q}`, strings.Repeat("x", MaxSchemaBytes))
	tests := []struct {
		name       string
		create     string
		compileErr error
		reasons    []string
		message    string
	}{
		{"no schema", "", nil, nil, ""},
		{"an object schema", `{"type":"object"}`, nil, nil, ""},
		{"no type", `{"properties":{}}`, nil, nil, ""},
		{"the true schema", `true`, nil, nil, ""},
		{"a string schema", `{"type":"string"}`, nil, []string{ReasonNotAnObjectSchema},
			`the create schema says "type": "string", but parameters are always a JSON object`},
		{"types without object", `{"type":["string","null"]}`, nil, []string{ReasonNotAnObjectSchema}, `without "object"`},
		{"an array", `["a"]`, nil, []string{ReasonNotAnObjectSchema}, `is ["a"], not a JSON Schema object`},
		{"too large", large, nil, []string{ReasonTooLarge}, "more than the 64 KiB a ServicePlan keeps"},
		{"a remote reference", `{"$ref":"https://example.com/s.json"}`, errors.Join(errors.New("refers outside"), schema.ErrRemoteRef),
			[]string{ReasonRemoteReference}, "lockstep refuses provisions, updates and binds on this plan"},
		{"invalid", `{"type":7}`, errors.New("not valid"), []string{ReasonInvalidSchema}, "not valid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &osbapi.Plan{}
			if tt.create != "" {
				p.Schemas = &osbapi.Schemas{ServiceInstance: &osbapi.ServiceInstanceSchemas{Create: &osbapi.InputParameters{Parameters: json.RawMessage(tt.create)}}}
			}
			got := Problems(osbapi.ServicePlan{Service: &osbapi.Service{}, Plan: p}, tt.compileErr)
			var reasons []string
			for _, g := range got {
				reasons = append(reasons, g.Reason)
			}
			assert.Equal(t, tt.reasons, reasons)
			cond := SchemasCondition(osbapi.ServicePlan{Service: &osbapi.Service{}, Plan: p}, got)
			if len(got) == 0 {
				assert.Equal(t, "True", string(cond.Status))
				if tt.create == "" {
					assert.Equal(t, ReasonNoSchemas, cond.Reason)
					assert.NotContains(t, cond.Message, "against the broker's", "a plan without schemas is not said to be checked against them")
				} else {
					assert.Equal(t, ReasonUsable, cond.Reason)
					assert.Contains(t, cond.Message, "against the broker's create schema")
				}
				return
			}
			assert.Equal(t, "False", string(cond.Status))
			assert.Equal(t, tt.reasons[0], cond.Reason)
			assert.Contains(t, cond.Message, tt.message)
		})
	}
}
