package lifecycle

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestInProgress(t *testing.T) {
	tests := []struct {
		name       string
		accepts    bool
		wantResult *Result
		wantError  string
	}{
		{"followed with accepts_incomplete", true, &Result{Status: Accepted, Operation: "op-1"}, ""},
		{"refused without", false, nil, "ConcurrencyError: instance i is being provisioned (operation op-1): send accepts_incomplete=true to follow it, or retry when it is done"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := inProgress(Common{AcceptsIncomplete: tt.accepts}, "op-1", "instance i is being provisioned")
			assert.Equal(t, tt.wantResult, res)
			if tt.wantError == "" {
				require.NoError(t, err)
				return
			}
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, Unprocessable, e.Kind)
			assert.EqualError(t, err, tt.wantError)
		})
	}
}
