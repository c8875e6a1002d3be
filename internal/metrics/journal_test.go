package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
)

func TestLockContentionCountsByKind(t *testing.T) {
	for _, kind := range []string{"ServiceInstance", "ServiceBinding"} {
		t.Run(kind, func(t *testing.T) {
			before := testutil.ToFloat64(lockContention.WithLabelValues(kind))
			LockContention(kind)
			assert.Equal(t, before+1, testutil.ToFloat64(lockContention.WithLabelValues(kind)))
		})
	}
}

func TestOperationPhaseCountsByPhase(t *testing.T) {
	for _, phase := range []string{"Pending", "InProgress", "Succeeded", "Failed", "Committed", "Orphaned", "Compensated"} {
		t.Run(phase, func(t *testing.T) {
			before := testutil.ToFloat64(operationPhases.WithLabelValues(phase))
			OperationPhase(phase)
			OperationPhase(phase)
			assert.Equal(t, before+2, testutil.ToFloat64(operationPhases.WithLabelValues(phase)))
		})
	}
}
