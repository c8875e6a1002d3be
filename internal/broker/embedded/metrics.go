package embedded

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded/specs"
)

// metrics are the broker's Prometheus metrics, served at /metrics. Each
// Broker has its own registry, so that several can run in one process.
type metrics struct {
	registry  *prometheus.Registry
	malformed *prometheus.GaugeVec
	failures  *prometheus.GaugeVec
}

func newMetrics() *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		malformed: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "lockstep", Subsystem: "osb", Name: "malformed_bundles",
			Help: "Bundles that a registry offered at its latest sync but that cannot be read (the specs they provided stay as they were), by registry.",
		}, []string{"registry"}),
		failures: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "lockstep", Subsystem: "osb", Name: "registry_consecutive_failures",
			Help: "Consecutive failed fetches of a registry (0 once a fetch works), by registry.",
		}, []string{"registry"}),
	}
	m.registry.MustRegister(m.malformed, m.failures)
	return m
}

// observe sets the gauges from the registries' sync status.
func (m *metrics) observe(status []specs.RegistryStatus) {
	for _, s := range status {
		m.malformed.WithLabelValues(s.Registry).Set(float64(len(s.Malformed)))
		m.failures.WithLabelValues(s.Registry).Set(float64(s.ConsecutiveFailures))
	}
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
}
