package report

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCompareMatchesTargetsByBenchmarkAndName(t *testing.T) {
	before := []Section{
		{Title: "2. End to end", Targets: []Target{{What: "create", Want: "<= 2x", Got: "4.2x", Status: Missed}}},
		{Title: "3. Broker path", Targets: []Target{{What: "gone from this tree", Got: "1", Status: Met}}},
	}
	after := []Section{
		{Title: "2. End to end", Targets: []Target{
			{What: "create", Want: "<= 2x", Got: "1.8x", Status: Met},
			{What: "new in this tree", Want: "0", Got: "0", Status: Met},
		}},
	}
	sec := Compare("Before and after", "abc123", before, after)
	require.Len(t, sec.Tables, 1)
	assert.Equal(t, [][]string{{"2. End to end", "create", "<= 2x", "4.2x (MISSED)", "1.8x", "met"}}, sec.Tables[0].Rows)
	assert.Contains(t, sec.Tables[0].Header, "before: abc123")
}

func TestCompareWithNothingInCommonSaysSo(t *testing.T) {
	sec := Compare("Before and after", "abc123", nil, []Section{{Title: "x", Targets: []Target{{What: "y"}}}})
	assert.Empty(t, sec.Tables)
	assert.Equal(t, []string{"No target was measured in both runs."}, sec.Notes)
}
