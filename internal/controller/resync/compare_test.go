package resync

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCompare(t *testing.T) {
	tests := []struct {
		name       string
		applied    State
		held       State
		wantPlan   string
		wantFields []string
		wantReason string
		wantMsg    string
	}{
		{name: "equal", applied: State{PlanID: "small", Parameters: json.RawMessage(`{"a":1,"b":"x"}`)},
			held: State{PlanID: "small", Parameters: json.RawMessage(`{"b":"x","a":1.0}`)}},
		{name: "the broker says nothing of plan or parameters", applied: State{PlanID: "small", Parameters: json.RawMessage(`{"a":1}`)},
			held: State{}},
		{name: "no parameters on either side", applied: State{PlanID: "small"}, held: State{PlanID: "small", Parameters: json.RawMessage(`{}`)}},
		{name: "plan changed behind lockstep's back", applied: State{PlanID: "small"}, held: State{PlanID: "large"},
			wantPlan: "large", wantReason: ReasonPlanDrift, wantMsg: `plan is "large" at the broker, "small" here`},
		{name: "a parameter changed", applied: State{PlanID: "small", Parameters: json.RawMessage(`{"storageGB":10,"region":"eu"}`)},
			held:       State{PlanID: "small", Parameters: json.RawMessage(`{"storageGB":30,"region":"eu"}`)},
			wantFields: []string{"storageGB"}, wantReason: ReasonParametersDrift, wantMsg: "parameters differ: storageGB (broker: 30, here: 10)"},
		{name: "a parameter added and one removed", applied: State{Parameters: json.RawMessage(`{"region":"eu"}`)},
			held: State{Parameters: json.RawMessage(`{"tier":"gold"}`)}, wantFields: []string{"region", "tier"}, wantReason: ReasonParametersDrift,
			wantMsg: `region (broker: unset, here: "eu"), tier (broker: "gold", here: unset)`},
		{name: "a nested change names the top-level parameter", applied: State{Parameters: json.RawMessage(`{"net":{"cidr":"10.0.0.0/24","ipv6":false}}`)},
			held: State{Parameters: json.RawMessage(`{"net":{"cidr":"10.0.1.0/24","ipv6":false}}`)}, wantFields: []string{"net"},
			wantReason: ReasonParametersDrift, wantMsg: `net (broker: {"cidr":"10.0.1.0/24","ipv6":false}, here: {"cidr":"10.0.0.0/24","ipv6":false})`},
		{name: "plan and parameters: the plan is the reason", applied: State{PlanID: "small", Parameters: json.RawMessage(`{"a":1}`)},
			held: State{PlanID: "large", Parameters: json.RawMessage(`{"a":2}`)}, wantPlan: "large", wantFields: []string{"a"},
			wantReason: ReasonPlanDrift, wantMsg: `plan is "large" at the broker, "small" here; parameters differ: a (broker: 2, here: 1)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Compare(tt.applied, tt.held)
			require.NoError(t, err)
			assert.Equal(t, tt.wantPlan, d.Plan)
			assert.Equal(t, tt.wantFields, d.Fields)
			if tt.wantReason == "" {
				assert.True(t, d.None())
				return
			}
			assert.False(t, d.None())
			assert.Equal(t, tt.wantReason, d.Reason())
			msg := d.Message("acme", func(id string) string { return id }, tt.applied.PlanID)
			assert.Contains(t, msg, `broker "acme" holds something else than lockstep applied`)
			assert.Contains(t, msg, tt.wantMsg)
		})
	}
}

func TestCompareRefusesParametersThatAreNotAnObject(t *testing.T) {
	_, err := Compare(State{Parameters: json.RawMessage(`{"a":1}`)}, State{Parameters: json.RawMessage(`[1,2]`)})
	assert.Error(t, err)
}
