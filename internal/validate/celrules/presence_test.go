package celrules

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPresenceOf(t *testing.T) {
	for _, tc := range []struct {
		name      string
		way       []string
		unchanged string
		ok        bool
	}{
		{"plain", []string{"parameters", "size"},
			"(has(self.parameters) && has(self.parameters.size)) == (has(oldSelf.parameters) && has(oldSelf.parameters.size)) && " +
				"(!(has(self.parameters) && has(self.parameters.size)) || self.parameters.size == oldSelf.parameters.size)", true},
		{"escaped as the API server escapes", []string{"db-name"},
			"(has(self.db__dash__name)) == (has(oldSelf.db__dash__name)) && (!(has(self.db__dash__name)) || self.db__dash__name == oldSelf.db__dash__name)", true},
		{"reserved word", []string{"namespace"},
			"(has(self.__namespace__)) == (has(oldSelf.__namespace__)) && (!(has(self.__namespace__)) || self.__namespace__ == oldSelf.__namespace__)", true},
		{"a name CEL cannot write", []string{"a b"}, "", false},
		{"nothing", nil, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, ok := PresenceOf(tc.way)
			require.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.unchanged, p.Unchanged)
		})
	}
}
