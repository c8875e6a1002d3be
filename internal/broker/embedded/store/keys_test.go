package store

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestKeys(t *testing.T) {
	tests := []struct {
		name string
		key  string
		want string
	}{
		{"spec", SpecKey("svc-1"), "specs/svc-1"},
		{"instance", InstanceKey("i-1"), "instances/i-1"},
		{"binding", BindingKey("i-1", "b-1"), "bindings/i-1/b-1"},
		{"job", JobKey("tok"), "jobs/tok"},
		{"state is <instance id>-state", StateKey("i-1"), "state/i-1-state"},
		{"runner", RunnerKey("r-1"), "runners/r-1"},
		{"gone instance", GoneInstanceKey("i-1"), "gone/instances/i-1"},
		{"gone binding", GoneBindingKey("i-1", "b-1"), "gone/bindings/i-1/b-1"},
		{"a slash in an identifier is escaped", InstanceKey("a/b"), "instances/a%2Fb"},
		{"both identifiers of a binding are escaped", BindingKey("a/b", "c/d"), "bindings/a%2Fb/c%2Fd"},
		{"a space is escaped", JobKey("a b"), "jobs/a%20b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.key)
		})
	}
}

// An identifier that holds a "/" cannot reach into another record's
// prefix: the bindings of instance "a" are not those of instance "a/b".
func TestBindingsOfOneInstanceOnly(t *testing.T) {
	tests := []struct {
		name     string
		instance string
		key      string
		want     bool
	}{
		{"its own binding", "a", BindingKey("a", "x"), true},
		{"another instance's binding", "a", BindingKey("b", "x"), false},
		{"an instance whose id starts with a slash-joined prefix", "a", BindingKey("a/b", "x"), false},
		{"an instance whose id has the same start", "a", BindingKey("ab", "x"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, strings.HasPrefix(tt.key, bindingsOf(tt.instance)))
		})
	}
}
