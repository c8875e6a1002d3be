package marketplace

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

func TestKeepsKind(t *testing.T) {
	sb := func(kinds ...v1alpha1.TypedKindActivation) *v1alpha1.ServiceBroker {
		return &v1alpha1.ServiceBroker{Spec: v1alpha1.ServiceBrokerSpec{TypedKinds: kinds}}
	}
	tests := []struct {
		name string
		sb   *v1alpha1.ServiceBroker
		want bool
	}{
		{"no entries", sb(), false},
		{"selected by a pattern", sb(v1alpha1.TypedKindActivation{Services: []string{"postgres*"}}), true},
		{"not selected", sb(v1alpha1.TypedKindActivation{Services: []string{"queue"}}), false},
		{"given its kind", sb(v1alpha1.TypedKindActivation{Services: []string{"postgresql-db"}, Kind: "PostgresqlDb"}), true},
		{"given another kind", sb(v1alpha1.TypedKindActivation{Services: []string{"*"}}, v1alpha1.TypedKindActivation{Services: []string{"postgresql-db"}, Kind: "Pg"}), false},
		{"given its plural", sb(v1alpha1.TypedKindActivation{Services: []string{"postgresql-db"}, Plural: "postgresqldbs"}), true},
		{"given another plural", sb(v1alpha1.TypedKindActivation{Services: []string{"postgresql-db"}, Plural: "pgs"}), false},
		{"given short names only", sb(v1alpha1.TypedKindActivation{Services: []string{"postgresql-db"}, ShortNames: []string{"pg"}}), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, KeepsKind(tt.sb, "postgresql-db", &v1alpha1.TypedKindStatus{Kind: "PostgresqlDb", Plural: "postgresqldbs"}))
		})
	}
}

func TestAggregatesRoles(t *testing.T) {
	sb := func(kinds ...v1alpha1.TypedKindActivation) *v1alpha1.ServiceBroker {
		return &v1alpha1.ServiceBroker{Spec: v1alpha1.ServiceBrokerSpec{TypedKinds: kinds}}
	}
	tests := []struct {
		name string
		sb   *v1alpha1.ServiceBroker
		want bool
	}{
		{"no entries", sb(), false},
		{"activated, not asked", sb(v1alpha1.TypedKindActivation{Services: []string{"*"}}), false},
		{"asked by the entry that selects it", sb(v1alpha1.TypedKindActivation{Services: []string{"postgres*"}, AggregateToDefaultRoles: true}), true},
		{"asked by another entry that selects it", sb(v1alpha1.TypedKindActivation{Services: []string{"postgresql-db"}, Kind: "Pg"},
			v1alpha1.TypedKindActivation{Services: []string{"*"}, AggregateToDefaultRoles: true}), true},
		{"asked for other services only", sb(v1alpha1.TypedKindActivation{Services: []string{"*"}},
			v1alpha1.TypedKindActivation{Services: []string{"queue"}, AggregateToDefaultRoles: true}), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, AggregatesRoles(tt.sb, "postgresql-db"))
		})
	}
}
