package env

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const exposition = `# HELP controller_runtime_reconcile_total Total number of reconciliations per controller
# TYPE controller_runtime_reconcile_total counter
controller_runtime_reconcile_total{controller="serviceinstance-finalizer",result="success"} 10000
controller_runtime_reconcile_total{controller="serviceinstance-finalizer",result="error"} 3
controller_runtime_reconcile_total{controller="brokeroperation",result="success"} 7
workqueue_depth{name="serviceinstance-finalizer"} 0
controller_runtime_webhook_latency_seconds_sum{webhook="/validate-lockstep-dev-v1alpha1-serviceinstance"} 1.25e-02
rest_client_requests_total{code="201",host="127.0.0.1:6443",method="POST"} 12
odd_label{msg="a \"quoted\", comma"} 1
go_goroutines 42 1700000000000
`

func TestParseMetrics(t *testing.T) {
	m, err := ParseMetrics(strings.NewReader(exposition))
	require.NoError(t, err)
	require.Len(t, m, 8)
	tests := []struct {
		name  string
		match map[string]string
		want  float64
	}{
		{"controller_runtime_reconcile_total", map[string]string{"controller": "serviceinstance-finalizer"}, 10003},
		{"controller_runtime_reconcile_total", map[string]string{"controller": "serviceinstance-finalizer", "result": "success"}, 10000},
		{"controller_runtime_reconcile_total", nil, 10010},
		{"workqueue_depth", map[string]string{"name": "serviceinstance-finalizer"}, 0},
		{"controller_runtime_webhook_latency_seconds_sum", nil, 0.0125},
		{"rest_client_requests_total", map[string]string{"method": "POST"}, 12},
		{"odd_label", map[string]string{"msg": `a "quoted", comma`}, 1},
		{"go_goroutines", nil, 42},
		{"absent", nil, 0},
	}
	for _, tt := range tests {
		assert.InDelta(t, tt.want, m.Sum(tt.name, tt.match), 1e-9, "%s %v", tt.name, tt.match)
	}
}

func TestParseMetricsWithPrefixes(t *testing.T) {
	m, err := ParseMetrics(strings.NewReader(exposition+"broken line without value\n"), "workqueue_", "rest_client_")
	require.NoError(t, err, "lines of other metrics are not parsed")
	require.Len(t, m, 2)
	assert.Equal(t, "workqueue_depth", m[0].Name)
	assert.Equal(t, "rest_client_requests_total", m[1].Name)
}

func TestParseMetricsRejects(t *testing.T) {
	for _, line := range []string{"no_value", `unterminated{a="b} 1`, "bad_value abc", `bad_labels{a=b} 1`} {
		_, err := ParseMetrics(strings.NewReader(line + "\n"))
		assert.Error(t, err, line)
	}
}
