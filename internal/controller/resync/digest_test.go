package resync

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/internal/parametersfrom"
)

func TestCompareByDigest(t *testing.T) {
	digest, err := parametersfrom.Digest([]byte(`{"size":2,"password":"hunter2"}`))
	require.NoError(t, err)
	applied := State{PlanID: "small", Parameters: json.RawMessage(`{"size":2}`), ParametersDigest: digest}
	tests := []struct {
		name       string
		held       string
		wantNone   bool
		wantFields []string
		wantMsg    string
	}{
		{name: "the broker holds what was sent", held: `{"password":"hunter2","size":2}`, wantNone: true},
		{name: "a value from a Secret differs", held: `{"password":"other","size":2}`,
			wantMsg: "parameters differ from what lockstep sent (compared by digest"},
		{name: "a parameter of spec.parameters differs", held: `{"password":"hunter2","size":3}`, wantFields: []string{"size"},
			wantMsg: "parameters differ: size (broker: 3, here: 2)"},
		{name: "the broker added a parameter", held: `{"password":"hunter2","size":2,"extra":"x"}`,
			wantMsg: "compared by digest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Compare(applied, State{PlanID: "small", Parameters: json.RawMessage(tt.held)})
			require.NoError(t, err)
			assert.Equal(t, tt.wantNone, d.None())
			if tt.wantNone {
				return
			}
			assert.Equal(t, tt.wantFields, d.Fields)
			assert.Equal(t, ReasonParametersDrift, d.Reason())
			msg := d.Message("acme", func(id string) string { return id }, "small")
			assert.Contains(t, msg, tt.wantMsg)
			assert.NotContains(t, msg, "hunter2")
			assert.NotContains(t, msg, "other")
			assert.NotContains(t, msg, "extra")
		})
	}
}
