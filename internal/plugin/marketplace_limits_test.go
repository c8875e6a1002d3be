package plugin

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

func TestLimitRows(t *testing.T) {
	paid := v1alpha1.PlanLimitSummary{Rule: "everyone", Name: "paid", Namespaces: "all", MaxInstances: 1, Counts: `plans not free among "*" of services "*"`}
	large := v1alpha1.PlanLimitSummary{Rule: "team-a", Name: "large", Namespaces: "team=a", MaxInstances: 2, Counts: `plans "large" of services "db"`}
	plan := func(broker, service, name string, limits ...v1alpha1.PlanLimitSummary) v1alpha1.ServicePlan {
		return v1alpha1.ServicePlan{Spec: v1alpha1.ServicePlanSpec{BrokerName: broker, ServiceName: service, Name: name, Access: v1alpha1.PlanAccess{Limits: limits}}}
	}
	plans := []v1alpha1.ServicePlan{
		plan("acme", "db", "small"),
		plan("acme", "db", "large", paid, large),
		plan("acme", "cache", "big", paid),
		plan("other", "db", "large"),
	}
	instances := []instanceUse{
		{"acme", "db", "large"}, {"acme", "db", "small"}, {"acme", "cache", "big"}, {"other", "db", "large"},
	}
	tests := []struct {
		name   string
		labels map[string]string
		want   string
	}{
		{name: "labels read, the rule selects the namespace", labels: map[string]string{"team": "a"}, want: `BROKER   RULE       LIMIT   APPLIES   USED   MAX   COUNTS
acme     everyone   paid    yes       2      1     plans not free among "*" of services "*"
acme     team-a     large   yes       1      2     plans "large" of services "db"
`},
		{name: "labels read, it does not", labels: map[string]string{}, want: "acme     team-a     large   no        1      2"},
		{name: "labels not readable", want: "acme     team-a     large   if team=a   1      2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			require.NoError(t, writeLimits(&out, limitRows(plans, instances, tt.labels)))
			assert.Contains(t, out.String(), tt.want)
		})
	}
}
