package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// namespace prefixes every lockstep metric.
const namespace = "lockstep"

// collectors are every metric of this package.
var collectors = []prometheus.Collector{admissionDecisions, brokerCalls, lockContention, operationPhases, resyncResults, resyncCorrections, operationsPruned, marketplaceWrites, admissionWrites, admissionWritesPerOperation, certificateExpiry, objects}

func init() {
	// Registered once, at import, on the registry the manager serves.
	// MustRegister fails only for a programming error (two metrics of
	// one name), which the tests catch.
	ctrlmetrics.Registry.MustRegister(collectors...)
}
