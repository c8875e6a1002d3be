package metrics

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// TestServedByTheManagersRegistry checks that every metric is on the
// registry controller-runtime's metrics server serves, under the names the
// README documents, with help and type.
func TestServedByTheManagersRegistry(t *testing.T) {
	AdmissionDecision("ServiceInstance", "CREATE", Allowed, ReasonBroker)
	BrokerCall("acme", "catalog", 200, 5*time.Millisecond)
	LockContention("ServiceInstance")
	OperationPhase("Committed")
	ResyncResult("ServiceInstance", "PlanDrift")
	ResyncCorrection("ServiceInstance", "started")
	OperationPruned("expired")
	MarketplaceWrite("ServicePlan", "create")

	tests := []struct {
		name, kind, sample string
	}{
		{"lockstep_admission_decisions_total", "counter",
			`lockstep_admission_decisions_total{kind="ServiceInstance",operation="CREATE",reason="Broker",result="allowed"}`},
		{"lockstep_broker_request_duration_seconds", "histogram",
			`lockstep_broker_request_duration_seconds_bucket{broker="acme",status="200",verb="catalog",le="0.005"}`},
		{"lockstep_lock_contention_total", "counter", `lockstep_lock_contention_total{kind="ServiceInstance"}`},
		{"lockstep_operation_phase_transitions_total", "counter", `lockstep_operation_phase_transitions_total{phase="Committed"}`},
		{"lockstep_operation_records_pruned_total", "counter", `lockstep_operation_records_pruned_total{reason="expired"}`},
		{"lockstep_resync_results_total", "counter", `lockstep_resync_results_total{kind="ServiceInstance",result="PlanDrift"}`},
		{"lockstep_resync_corrections_total", "counter", `lockstep_resync_corrections_total{kind="ServiceInstance",outcome="started"}`},
		{"lockstep_marketplace_writes_total", "counter", `lockstep_marketplace_writes_total{kind="ServicePlan",verb="create"}`},
	}
	families, err := ctrlmetrics.Registry.Gather()
	require.NoError(t, err)
	served := map[string]bool{}
	for _, f := range families {
		served[f.GetName()] = true
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.True(t, served[tt.name], "%s is not on controller-runtime's metrics registry", tt.name)
			n, err := testutil.GatherAndCount(ctrlmetrics.Registry, tt.name)
			require.NoError(t, err)
			assert.Positive(t, n)
			problems, err := testutil.GatherAndLint(ctrlmetrics.Registry, tt.name)
			require.NoError(t, err)
			assert.Empty(t, problems, "Prometheus naming conventions")
		})
	}
	text := exposition(t)
	for _, tt := range tests {
		assert.Contains(t, text, "# TYPE "+tt.name+" "+tt.kind)
		assert.Contains(t, text, tt.sample)
	}
}

// exposition is the registry in the Prometheus text format, as the
// manager's /metrics serves it.
func exposition(t *testing.T) string {
	t.Helper()
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(ctrlmetrics.Registry, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	return rec.Body.String()
}
