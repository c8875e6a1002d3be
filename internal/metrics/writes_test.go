package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func perOperation(t *testing.T) (uint64, float64) {
	t.Helper()
	var m dto.Metric
	require.NoError(t, admissionWritesPerOperation.(prometheus.Metric).Write(&m))
	return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
}

func TestAdmissionWritesCountsWritesAndOperations(t *testing.T) {
	lease := Write{Kind: "Lease", Verb: "create"}
	tests := []struct {
		name     string
		called   bool
		writes   []Write
		wantOps  uint64
		wantSum  float64
		wantLock float64
	}{
		{"one broker operation, one write", true, []Write{lease}, 1, 1, 1},
		{"a lock held by another operation: no broker operation", false, []Write{lease}, 0, 0, 1},
		{"a lock taken over", true, []Write{lease, {Kind: "Lease", Verb: "update"}}, 1, 2, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ops, sum := perOperation(t)
			before := testutil.ToFloat64(admissionWrites.WithLabelValues("Lease", "create"))
			AdmissionWrites(tt.called, tt.writes)
			gotOps, gotSum := perOperation(t)
			assert.Equal(t, tt.wantOps, gotOps-ops)
			assert.Equal(t, tt.wantSum, gotSum-sum)
			assert.Equal(t, before+tt.wantLock, testutil.ToFloat64(admissionWrites.WithLabelValues("Lease", "create")))
		})
	}
}
