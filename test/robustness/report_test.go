package robustness

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/lockstep-dev/lockstep/test/robustness/check"
	"github.com/lockstep-dev/lockstep/test/robustness/history"
)

func TestTargetsLine(t *testing.T) {
	all := map[history.FaultKind]int{}
	for _, k := range AllFaults {
		all[k] = targetInjected
	}
	few := map[history.FaultKind]int{}
	for k, n := range all {
		few[k] = n
	}
	few[KillAPIServer] = 14
	tests := []struct {
		name string
		res  Result
		want []string
	}{
		{"every target met", Result{Requests: make([]history.Request, targetOperations), Injected: all},
			[]string{"**met**", "(2000)"}},
		{"too few of one kind", Result{Requests: make([]history.Request, targetOperations), Injected: few},
			[]string{"**missed**", "fewer than 100 injected of kill-apiserver 14"}},
		{"violations, not converged, too few operations", Result{Requests: make([]history.Request, 10), Injected: all, Converged: -1,
			Violations: []Violation{{Violation: check.Violation{Invariant: check.NoLeak}}}},
			[]string{"**missed**", "1 violations (target 0)", "did not converge", "10 operations (target 2000)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := targetsLine(&tt.res)
			for _, w := range tt.want {
				assert.Contains(t, got, w)
			}
		})
	}
}

func TestUnconvergedNamesTheObjectsByInvariant(t *testing.T) {
	got := unconverged([]check.Violation{
		{Invariant: check.OperationsFinal, Object: "ServiceInstance rb-22/c1-i735"},
		{Invariant: check.NoLeak, Object: "instance 11057d4f at broker \"fake\""},
	})
	assert.Equal(t, `"nothing at a broker that no object accounts for" did not hold for 1: instance 11057d4f at broker "fake"; `+
		`"every operation final" did not hold for 1: ServiceInstance rb-22/c1-i735`, got)
}
