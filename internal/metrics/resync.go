package metrics

import "github.com/prometheus/client_golang/prometheus"

var resyncResults = prometheus.NewCounterVec(prometheus.CounterOpts{
	Namespace: namespace,
	Subsystem: "resync",
	Name:      "results_total",
	Help: "Objects re-read from their broker by resync, by kind and result (InSync, PlanDrift, ParametersDrift, " +
		"GoneAtBroker, BrokerUnreachable, NotRetrievable).",
}, []string{"kind", "result"})

var resyncCorrections = prometheus.NewCounterVec(prometheus.CounterOpts{
	Namespace: namespace,
	Subsystem: "resync",
	Name:      "corrections_total",
	Help:      "Drift corrections resync started by re-applying an object's spec, by kind and outcome (started, refused).",
}, []string{"kind", "outcome"})

// ResyncResult counts one object re-read from its broker.
func ResyncResult(kind, result string) {
	resyncResults.WithLabelValues(kind, result).Inc()
}

// ResyncCorrection counts one drift correction.
func ResyncCorrection(kind, outcome string) {
	resyncCorrections.WithLabelValues(kind, outcome).Inc()
}
