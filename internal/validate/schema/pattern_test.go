package schema

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TestPatternBounds shows the bounds on the patterns parameters hold
// (a parameter whose schema says "format": "regex"): each is refused as
// not a valid regex with the bound it is over, and the broker's own
// patterns are compiled whatever their size.
func TestPatternBounds(t *testing.T) {
	long := strings.Repeat("[a-z]{1000}", 3) // far beyond the size, short
	manyRanges := "["                        // a class of 128 ranges
	for i := range 128 {
		manyRanges += fmt.Sprintf(`\x{%x}`, 0x100+2*i)
	}
	manyRanges += "]"
	tests := []struct {
		name    string
		schema  string
		params  any
		wantErr string // "" when the parameters pass
	}{
		{name: "a small pattern", schema: `{"properties":{"filter":{"type":"string","format":"regex"}}}`,
			params: map[string]any{"filter": "^app-[0-9]+$"}},
		{name: "a pattern longer than the bound", schema: `{"properties":{"filter":{"type":"string","format":"regex"}}}`,
			params:  map[string]any{"filter": strings.Repeat("a", maxPatternBytes+1)},
			wantErr: "the pattern is 1001 bytes long; lockstep compiles patterns of at most 1000 bytes"},
		{name: "a short pattern that repeats beyond the size", schema: `{"properties":{"filter":{"type":"string","format":"regex"}}}`,
			params:  map[string]any{"filter": long},
			wantErr: "the pattern has a size of 3004 (each repetition counts its body as often as it repeats); lockstep compiles patterns of a size of at most 2000"},
		{name: "character classes count by their ranges", schema: `{"properties":{"filter":{"type":"string","format":"regex"}}}`,
			params:  map[string]any{"filter": manyRanges + "{1000}"},
			wantErr: "the pattern has a size of 5001"},
		{name: "a pattern that names many Unicode classes", schema: `{"properties":{"filter":{"type":"string","format":"regex"}}}`,
			params:  map[string]any{"filter": strings.Repeat(`(?i)\pL`, 100)},
			wantErr: "the pattern names 100 Unicode classes (\\p); lockstep compiles patterns that name at most 8"},
		{name: "patterns that name many Unicode classes together", schema: `{"properties":{"filters":{"type":"array","items":{"type":"string","format":"regex"}}}}`,
			params:  map[string]any{"filters": []any{`\pL{3}\pN`, `\pL\pN\pS`, `\pL\pN\pS\pP`, `\pL\pN\pS\pP\pM`, `\pL\pN\pS\pP`}},
			wantErr: "name more than 16 Unicode classes (\\p) together"},
		{name: "patterns within the bound each, beyond it together", schema: `{"properties":{"filters":{"type":"array","items":{"type":"string","format":"regex"}}}}`,
			params:  map[string]any{"filters": []any{"[a-z]{999}", "[a-z]{999}", "[a-z]{999}", "[a-z]{999}", "[a-z]{999}"}},
			wantErr: "the patterns of these parameters have a size of more than 4000 together"},
		{name: "the broker's own pattern is compiled whatever its size", schema: `{"properties":{"name":{"type":"string","pattern":"` + long + `"}}}`,
			params: map[string]any{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Compile(json.RawMessage(tt.schema), nil, nil)
			require.NoError(t, err)
			raw, err := json.Marshal(tt.params)
			require.NoError(t, err)
			errs := s.ValidateProvision(&runtime.RawExtension{Raw: raw}, field.NewPath("spec", "parameters"))
			if tt.wantErr == "" {
				assert.Empty(t, errs)
				return
			}
			require.NotEmpty(t, errs)
			assert.Contains(t, errs.ToAggregate().Error(), tt.wantErr)
		})
	}
}

// TestViolationsListed shows that a refusal lists at most maxViolations
// violations, and says how many more there are.
func TestViolationsListed(t *testing.T) {
	s, err := Compile(json.RawMessage(`{"properties":{"list":{"type":"array","items":{"type":"string"}}}}`), nil, nil)
	require.NoError(t, err)
	items := make([]string, 300)
	for i := range items {
		items[i] = fmt.Sprint(i)
	}
	raw := []byte(`{"list":[` + strings.Join(items, ",") + `]}`)
	errs := s.ValidateProvision(&runtime.RawExtension{Raw: raw}, field.NewPath("spec", "parameters"))
	require.Len(t, errs, maxViolations+1)
	assert.Equal(t, "spec.parameters: Invalid value: and 200 more violations of the plan's create schema, not listed (a refusal lists the first 100): correct these first",
		errs[maxViolations].Error())
}
