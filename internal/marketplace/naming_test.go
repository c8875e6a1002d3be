package marketplace

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/util/validation"
)

func TestPlanName(t *testing.T) {
	long := strings.Repeat("very-long-name-", 20)
	tests := []struct {
		name                  string
		broker, service, plan string
		want                  string // exact, or a prefix when hashed
		hashed                bool
	}{
		{"readable as it is", "embedded", "quick", "small", "embedded.quick.small", false},
		{"dashes and digits", "acme", "postgres-16", "ha-3", "acme.postgres-16.ha-3", false},
		{"uppercase", "acme", "Postgres", "Small", "acme.postgres.small-", true},
		{"spaces and symbols", "acme", "My DB!", "100 GB", "acme.my-db.100-gb-", true},
		{"a dot in the service", "acme", "db.v2", "small", "acme.db-v2.small-", true},
		{"a dot in the plan", "acme", "db", "v2.small", "acme.db.v2-small-", true},
		{"nothing usable", "acme", "!!!", "small", "acme.x.small-", true},
		{"too long", "acme", long, "small", "acme.very-long-name-", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := PlanName(tt.broker, tt.service, tt.plan, "service-id", "plan-id")
			assert.Empty(t, validation.IsDNS1123Subdomain(got), "%q is a valid object name", got)
			if !tt.hashed {
				assert.Equal(t, tt.want, got)
				return
			}
			assert.True(t, strings.HasPrefix(got, tt.want), "%q starts with %q", got, tt.want)
			assert.Regexp(t, `-[0-9a-f]{8}$`, got, "ends with a short hash")
			assert.Equal(t, got, PlanName(tt.broker, tt.service, tt.plan, "service-id", "plan-id"), "the same every time")
		})
	}
}

func TestNamesNeverMeet(t *testing.T) {
	// Names that sanitize alike differ by their ids' hash.
	a := PlanName("acme", "DB", "small", "s1", "p1")
	b := PlanName("acme", "db!", "small", "s2", "p2")
	assert.NotEqual(t, a, b)
	// A dot inside a part never reads as a separator.
	assert.NotEqual(t, PlanName("acme", "a.b", "c", "s1", "p1"), PlanName("acme", "a", "b.c", "s2", "p2"))
	assert.NotEqual(t, PlanName("acme", "a.b", "c", "s1", "p1"), "acme.a.b.c")
}

func TestOfferingName(t *testing.T) {
	assert.Equal(t, "embedded.quick", OfferingName("embedded", "quick", "id"))
	got := OfferingName("embedded", "Quick Start", "id")
	assert.Regexp(t, `^embedded\.quick-start-[0-9a-f]{8}$`, got)
}
