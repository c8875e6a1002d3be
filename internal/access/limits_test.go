package access

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// limited are rules with limits: every namespace may hold one instance of
// the plans not free and three of db's small plans; team a's namespaces
// two of the large plans besides.
func limited() []v1alpha1.AccessRule {
	return []v1alpha1.AccessRule{
		{Name: "everyone", Services: []string{"*"}, Plans: []string{"*"}, Limits: []v1alpha1.PlanLimit{
			{Name: "paid", NotFree: true, MaxInstances: 1},
			{Name: "small-db", Plans: []string{"small", "tiny-*"}, MaxInstances: 3},
		}},
		{Name: "team-a", NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}, Services: []string{"db"}, Plans: []string{"large*"},
			Limits: []v1alpha1.PlanLimit{{Name: "large", MaxInstances: 2}}},
	}
}

func TestLimitsApplyToTheNamespacesTheirRuleSelects(t *testing.T) {
	names := func(ls []Limit) []string {
		var out []string
		for _, l := range ls {
			out = append(out, l.String())
		}
		return out
	}
	r := Compile("acme", limited())
	assert.Equal(t, []string{`limit "paid" of access rule "everyone"`, `limit "small-db" of access rule "everyone"`}, names(r.Limits(nil)))
	assert.Equal(t, []string{`limit "paid" of access rule "everyone"`, `limit "small-db" of access rule "everyone"`, `limit "large" of access rule "team-a"`},
		names(r.Limits(map[string]string{"team": "a"})))
	assert.Empty(t, Compile("acme", nil).Limits(nil), "no rules, no limits")
	assert.False(t, Compile("acme", nil).HasLimits())
	assert.False(t, Compile("acme", rules()).HasLimits())
	assert.True(t, r.HasLimits())
	broken := limited()
	broken[0].NamespaceSelector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "x", Operator: "Near"}}
	assert.Empty(t, Compile("acme", broken).Limits(nil), "rules that cannot be used open nothing: nothing to limit")
}

func TestLimitCounts(t *testing.T) {
	r := Compile("acme", limited())
	ls := r.Limits(map[string]string{"team": "a"})
	paid, small, large := ls[0], ls[1], ls[2]
	tests := []struct {
		limit         Limit
		service, plan string
		free, want    bool
	}{
		{paid, "db", "large", false, true},
		{paid, "db", "small", true, false},
		{paid, "cache", "x", false, true},
		{small, "db", "small", true, true},
		{small, "db", "tiny-1", false, true},
		{small, "db", "large", false, false},
		{large, "db", "large", false, true},
		{large, "db", "large-2", true, true},
		{large, "cache", "large", false, false}, // the rule opens db only
		{large, "db", "small", true, false},     // nor small
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, tt.limit.Counts(tt.service, tt.plan, tt.free), "%s counts %s/%s (free %v)", tt.limit, tt.service, tt.plan, tt.free)
	}
	assert.Equal(t, `plans not free among "*" of services "*"`, paid.CountsText())
	assert.Equal(t, `plans "small", "tiny-*" of services "*"`, small.CountsText())
	assert.Equal(t, `plans "large*" of services "db"`, large.CountsText())
}

func TestOfShowsTheLimitsThatCountAPlan(t *testing.T) {
	r := Compile("acme", limited())
	assert.Equal(t, []v1alpha1.PlanLimitSummary{
		{Rule: "everyone", Name: "paid", Namespaces: "all", MaxInstances: 1, Counts: `plans not free among "*" of services "*"`},
		{Rule: "team-a", Name: "large", Namespaces: "team=a", MaxInstances: 2, Counts: `plans "large*" of services "db"`},
	}, r.Of("db", "large", false).Limits)
	assert.Equal(t, []v1alpha1.PlanLimitSummary{
		{Rule: "everyone", Name: "small-db", Namespaces: "all", MaxInstances: 3, Counts: `plans "small", "tiny-*" of services "*"`},
	}, r.Of("db", "small", true).Limits)
	assert.Empty(t, Compile("acme", nil).Of("db", "large", false).Limits)
}
