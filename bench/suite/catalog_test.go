package suite

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/internal/validate/schema"
)

func TestGeneratedCatalog(t *testing.T) {
	for _, tt := range []struct{ plans, perService int }{{1, 10}, {2, 10}, {10, 10}, {11, 10}, {1000, 10}, {1, 2}, {100, 2}} {
		plans := tt.plans
		c := generatedCatalog(plans, tt.perService)
		count := 0
		ids := map[string]bool{}
		for _, s := range c.Services {
			for _, p := range s.Plans {
				count++
				assert.False(t, ids[p.ID], "plan id %s twice", p.ID)
				ids[p.ID] = true
			}
		}
		assert.Equal(t, plans, count, "%d plans", plans)
		assert.Len(t, c.Services, (plans+tt.perService-1)/tt.perService)
		last := c.Services[len(c.Services)-1]
		assert.Equal(t, targetService, last.Name)
		assert.Equal(t, targetPlan, last.Plans[len(last.Plans)-1].Name)
		sp, err := c.FindPlan(targetService, targetPlan)
		require.NoError(t, err)
		compiled, err := schema.Compile(sp.CreateSchema(), sp.UpdateSchema(), sp.BindSchema())
		require.NoError(t, err)
		assert.Equal(t, []string{"region"}, compiled.CreateOnly())
	}
}
