package plugin

import (
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// gauge returns the value of the sample of family name whose labels
// include want, and whether there is one.
func gauge(t *testing.T, name string, want map[string]string) (float64, bool) {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if hasLabels(m, want) {
				return m.GetGauge().GetValue(), true
			}
		}
	}
	return 0, false
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	got := map[string]string{}
	for _, l := range m.GetLabel() {
		got[l.GetName()] = l.GetValue()
	}
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

// TestMetricsServeWhatTheObjectsSay: the lockstep running here serves, on
// the registry its /metrics serves, the gauges the dashboard and alerts
// read: its brokers' readiness, its objects' conditions, its journal, and
// its serving certificate's expiry.
func TestMetricsServeWhatTheObjectsSay(t *testing.T) {
	ns := namespace(t, "plugin-metrics")
	r := lockstep(t, ns, "provision", "db", "--service", "quick", "--plan", "small", "-p", "region=eu")
	require.Equal(t, 0, r.code, r.text())

	ready, ok := gauge(t, "lockstep_servicebroker_ready", map[string]string{"broker": "embedded"})
	assert.True(t, ok)
	assert.Equal(t, 1.0, ready)
	synced, ok := gauge(t, "lockstep_servicebroker_catalog_sync_timestamp_seconds", map[string]string{"broker": "embedded"})
	assert.True(t, ok)
	assert.Positive(t, synced)
	provisioned, ok := gauge(t, "lockstep_object_conditions",
		map[string]string{"kind": "ServiceInstance", "condition": "Ready", "status": "True", "reason": "Provisioned"})
	assert.True(t, ok)
	assert.GreaterOrEqual(t, provisioned, 1.0)
	committed, ok := gauge(t, "lockstep_operation_records", map[string]string{"phase": "Committed"})
	assert.True(t, ok)
	assert.GreaterOrEqual(t, committed, 1.0)
	expiry, ok := gauge(t, "lockstep_webhook_certificate_expiry_timestamp_seconds", nil)
	assert.True(t, ok, "the expiry of the certificate the webhook server serves")
	assert.Greater(t, expiry, float64(time.Now().Unix()))
}
