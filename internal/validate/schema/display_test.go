package schema

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestShownValue(t *testing.T) {
	long := strings.Repeat("x", 200)
	tests := []struct {
		name string
		v    any
		want string // as field.Error shows it
	}{
		{"string", "eu", `"eu"`},
		{"number as written", json.Number("1.50"), `1.50`},
		{"null", nil, `null`},
		{"object, keys sorted", object{"b": true, "a": []any{json.Number("1"), "x"}}, `{"a":[1,"x"],"b":true}`},
		{"escapes", "a\"b\\c\n\x01é<>", `"a\"b\\c\n\u0001é<>"`},
		{"long string cut", long, `"` + strings.Repeat("x", 119) + `...`},
		{"long object cut", object{"k": long}, `{"k":"` + strings.Repeat("x", 114) + `...`},
		{"cut between runes, never inside one", strings.Repeat("é", 100), `"` + strings.Repeat("é", 59) + `...`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			shown := shownValue(tt.v)
			err := field.Invalid(field.NewPath("p"), shown, "detail")
			assert.Equal(t, "p: Invalid value: "+tt.want+": detail", err.Error())
			if _, isJSON := shown.(json.RawMessage); isJSON {
				assert.True(t, json.Valid(shown.(json.RawMessage)))
			}
		})
	}
}

func TestShownTextIsNotJSON(t *testing.T) {
	_, err := json.Marshal(shownText("{\"a"))
	assert.Error(t, err, "field.Error must fall back to String")
	assert.Equal(t, "abc", textValue([]byte("abc")).String())
}

func TestCut(t *testing.T) {
	assert.Equal(t, "abc", cut("abc", 3))
	assert.Equal(t, "ab...", cut("abc", 2))
	assert.Equal(t, "é...", cut("éé", 3), "never inside a character")
	assert.Equal(t, "...", cut("é", 1))
}

func TestLongDescriptionsAreCut(t *testing.T) {
	var alternatives []string
	for i := range 100 {
		alternatives = append(alternatives, fmt.Sprintf(`{"enum": ["value number %d"]}`, i))
	}
	s := mustCompile(t, `{"properties": {"a": {"anyOf": [`+strings.Join(alternatives, ",")+`]}}}`, "", "")
	errs := s.ValidateProvision(ext(`{"a": 1}`), paramsPath)
	require.Len(t, errs, 1)
	assert.Contains(t, errs[0].Detail, `[0] must be "value number 0"; [1] must be "value number 1"`)
	assert.True(t, strings.HasSuffix(errs[0].Detail, "..."), errs[0].Detail)
	assert.Less(t, len(errs[0].Detail), maxDescription+100)
}
