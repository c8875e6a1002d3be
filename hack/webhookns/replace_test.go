package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestReplace(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		n              int
	}{
		{"service namespace", "namespace: LOCKSTEP_NAMESPACE\n", "namespace: lockstep-system\n", 1},
		{"selector and user", `values: ["kube-system","LOCKSTEP_NAMESPACE"] user != "system:serviceaccount:LOCKSTEP_NAMESPACE:lockstep"`,
			`values: ["kube-system","lockstep-system"] user != "system:serviceaccount:lockstep-system:lockstep"`, 2},
		{"nothing to replace", "namespace: other\n", "namespace: other\n", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, n := replace(tc.in)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.n, n)
		})
	}
}
