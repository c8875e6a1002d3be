package metrics

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// NoAnswer is the status label of a broker call that got no HTTP answer
// (connection refused, timeout, TLS failure).
const NoAnswer = "none"

var brokerCalls = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Namespace: namespace,
	Subsystem: "broker",
	Name:      "request_duration_seconds",
	Help: "Duration of requests to OSB brokers, by ServiceBroker, verb (catalog, provision, update, deprovision, bind, unbind, " +
		"get_instance, get_binding, instance_last_operation, binding_last_operation) and HTTP status (\"none\" when no answer came).",
	// From a loopback broker's milliseconds to the 20s request timeout.
	Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20},
}, []string{"broker", "verb", "status"})

// BrokerCall observes one request to a broker: the ServiceBroker's name,
// the verb, the HTTP status of the answer (0 when none came) and how long
// it took.
func BrokerCall(broker, verb string, status int, d time.Duration) {
	code := NoAnswer
	if status > 0 {
		code = strconv.Itoa(status)
	}
	brokerCalls.WithLabelValues(broker, verb, code).Observe(d.Seconds())
}
