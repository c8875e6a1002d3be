package metrics

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// histogram reads the sample count and sum of one labelled histogram.
func histogram(t *testing.T, broker, verb, status string) (uint64, float64) {
	t.Helper()
	obs, err := brokerCalls.GetMetricWithLabelValues(broker, verb, status)
	require.NoError(t, err)
	var m dto.Metric
	require.NoError(t, obs.(prometheus.Metric).Write(&m))
	return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
}

func TestBrokerCallObservesByVerbAndStatus(t *testing.T) {
	tests := []struct {
		name       string
		verb       string
		status     int
		d          time.Duration
		wantStatus string
	}{
		{"created", "provision", 201, 30 * time.Millisecond, "201"},
		{"accepted", "deprovision", 202, 2 * time.Second, "202"},
		{"refused", "update", 422, time.Millisecond, "422"},
		{"no answer", "bind", 0, 20 * time.Second, NoAnswer},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			count, sum := histogram(t, "acme", tt.verb, tt.wantStatus)
			BrokerCall("acme", tt.verb, tt.status, tt.d)
			gotCount, gotSum := histogram(t, "acme", tt.verb, tt.wantStatus)
			assert.Equal(t, count+1, gotCount)
			assert.InDelta(t, sum+tt.d.Seconds(), gotSum, 1e-9)
		})
	}
}
