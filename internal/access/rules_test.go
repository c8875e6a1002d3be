package access

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// rules of broker acme: team a may use everything, every namespace the
// small plans of db, the sandbox namespaces the dev plans of any service.
func rules() []v1alpha1.AccessRule {
	return []v1alpha1.AccessRule{
		{Name: "team-a", NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}, Services: []string{"*"}, Plans: []string{"*"}},
		{Name: "everyone-small", Services: []string{"db"}, Plans: []string{"small", "tiny-*"}},
		{Name: "sandbox-dev", NamespaceSelector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "env", Operator: metav1.LabelSelectorOpIn, Values: []string{"sandbox", "dev"}}}}, Services: []string{"*"}, Plans: []string{"*-dev"}},
	}
}

func TestDecide(t *testing.T) {
	tests := []struct {
		name    string
		rules   []v1alpha1.AccessRule
		labels  map[string]string
		service string
		plan    string
		allowed bool
		why     []string
	}{
		{name: "no rules: everything open", service: "db", plan: "large", allowed: true},
		{name: "a rule that selects the namespace and opens the plan", rules: rules(), labels: map[string]string{"team": "a"}, service: "db", plan: "large", allowed: true},
		{name: "a rule for every namespace", rules: rules(), service: "db", plan: "small", allowed: true},
		{name: "a pattern", rules: rules(), service: "db", plan: "tiny-2", allowed: true},
		{name: "a set-based selector", rules: rules(), labels: map[string]string{"env": "dev"}, service: "cache", plan: "x-dev", allowed: true},
		{name: "selected, plan not opened", rules: rules(), labels: map[string]string{"team": "b"}, service: "db", plan: "large",
			why: []string{
				`plan "large" of service "db" (broker "acme") is not open to namespace "team-b": `,
				`access rule "team-a" opens the plan only to namespaces matching team=a`,
				`access rule "everyone-small" selects it but opens only plans "small", "tiny-*" of services "db"`,
				`ask a cluster administrator to open it (spec.access of ServiceBroker "acme"), or use a plan this namespace may use (kubectl get serviceplans shows each plan's access)`,
			}},
		{name: "another service: nothing selects and opens", rules: rules()[:1], labels: map[string]string{"team": "b"}, service: "cache", plan: "small",
			why: []string{`access rule "team-a" opens the plan only to namespaces matching team=a`}},
		{name: "no rule selects or opens", rules: rules()[2:], service: "db", plan: "large",
			why: []string{`no access rule selects this namespace or opens the plan (rules: "sandbox-dev")`}},
		{name: "rules that cannot be used refuse everything", service: "db", plan: "small",
			rules: []v1alpha1.AccessRule{{Name: "broken", NamespaceSelector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "team", Operator: "Near"}}}, Services: []string{"*"}, Plans: []string{"*"}}},
			why: []string{`plan "small" of service "db" (broker "acme") is open to no namespace: the access rules of ServiceBroker "acme" cannot be used (access rule "broken": namespaceSelector: `,
				`a cluster administrator must fix them`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Compile("acme", tt.rules).Decide("team-b", tt.labels, tt.service, tt.plan)
			assert.Equal(t, tt.allowed, d.Allowed, d.Why)
			for _, w := range tt.why {
				assert.Contains(t, d.Why, w)
			}
		})
	}
	assert.True(t, (*Rules)(nil).Decide("x", nil, "db", "large").Allowed, "nil rules open everything")
}

func TestOf(t *testing.T) {
	r := Compile("acme", rules())
	assert.Equal(t, v1alpha1.PlanAccess{Namespaces: "all"}, Compile("acme", nil).Of("db", "large", false))
	assert.Equal(t, v1alpha1.PlanAccess{Namespaces: "team=a", Rules: []string{"team-a"}}, r.Of("db", "large", false))
	assert.Equal(t, v1alpha1.PlanAccess{Namespaces: "all", Rules: []string{"team-a", "everyone-small"}}, r.Of("db", "small", true))
	assert.Equal(t, v1alpha1.PlanAccess{Namespaces: "team=a or env in (dev,sandbox)", Rules: []string{"team-a", "sandbox-dev"}}, r.Of("cache", "x-dev", true))
	assert.Equal(t, v1alpha1.PlanAccess{Namespaces: "none"}, Compile("acme", rules()[1:2]).Of("cache", "large", false))
}

func TestMatch(t *testing.T) {
	tests := []struct {
		pattern, name string
		want          bool
	}{
		{"small", "small", true}, {"small", "smaller", false},
		{"*", "", true}, {"*", "anything", true},
		{"tiny-*", "tiny-", true}, {"tiny-*", "tiny-2", true}, {"tiny-*", "tin", false},
		{"*-dev", "x-dev", true}, {"*-dev", "x-devx", false},
		{"a*b*c", "abc", true}, {"a*b*c", "axxbyyc", true}, {"a*b*c", "acb", false},
		{"a*a", "a", false}, {"a*a", "aa", true},
		{"*.*", "a.b", true}, {"*.*", "ab", false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, Match(tt.pattern, tt.name), "%q ~ %q", tt.pattern, tt.name)
	}
}
