package metrics

import "github.com/prometheus/client_golang/prometheus"

var admissionWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
	Namespace: namespace,
	Subsystem: "admission",
	Name:      "apiserver_writes_total",
	Help: "API server writes the validating webhooks wait for before they reply, by resource (Lease, BrokerOperation) " +
		"and verb (create, update, patch, delete).",
}, []string{"resource", "verb"})

var admissionWritesPerOperation = prometheus.NewHistogram(prometheus.HistogramOpts{
	Namespace: namespace,
	Subsystem: "admission",
	Name:      "apiserver_writes_per_operation",
	Help:      "API server writes an admission waited for per broker operation it carried out (one: the object's lock).",
	Buckets:   []float64{0, 1, 2, 3, 4},
})

// Write is one API server write: the resource and the verb.
type Write struct {
	Kind string
	Verb string
}

// AdmissionWrites counts the API server writes one admission waited for;
// called says it went on to call the broker, which makes it one broker
// operation.
func AdmissionWrites(called bool, writes []Write) {
	for _, w := range writes {
		admissionWrites.WithLabelValues(w.Kind, w.Verb).Inc()
	}
	if called {
		admissionWritesPerOperation.Observe(float64(len(writes)))
	}
}
