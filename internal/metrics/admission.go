package metrics

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// The result label of an admission decision.
const (
	Allowed = "allowed"
	Denied  = "denied"
)

// Reasons of allowed decisions; a denial's reason is the Kubernetes status
// reason of the rejection, or one of the broker's reasons below (ReasonOf).
const (
	// ReasonUnchanged: an update that leaves the spec as it was (labels,
	// annotations, finalizers) or of an object being deleted; nothing checked.
	ReasonUnchanged = "Unchanged"
	// ReasonDryRun: a dry run that passed every static check.
	ReasonDryRun = "DryRun"
	// ReasonBroker: carried out at the broker (or allowed with a warning
	// while the broker still works on it).
	ReasonBroker = "Broker"
	// ReasonDetached: a delete that leaves the broker's resource in place
	// (reconcile policy detach-on-delete or observe).
	ReasonDetached = "Detached"
	// ReasonPreflight: lockstep's own dry run of a change it is about to
	// carry out (its preflight), allowed at once.
	ReasonPreflight = "Preflight"
)

// Reasons of denials that pass a broker's answer on. The rejection itself
// carries the Kubernetes status reason the HTTP status maps to (a 422 the
// broker gave is Invalid, as a user's invalid input is): these tell the
// broker's part apart.
const (
	// ReasonBrokerRefused: the broker said no (a 4xx answer, or an
	// asynchronous operation that ended failed); nothing changed.
	ReasonBrokerRefused = "BrokerRefused"
	// ReasonBrokerUnavailable: the request never reached the broker
	// (connection refused, DNS, TLS); nothing changed.
	ReasonBrokerUnavailable = "BrokerUnavailable"
	// ReasonBrokerOutcomeUnknown: the request went out and no answer came
	// back (timeout, a dropped connection, 5xx, an answer lockstep cannot
	// read), or lockstep could not learn how an accepted one ended.
	ReasonBrokerOutcomeUnknown = "BrokerOutcomeUnknown"
	// ReasonBrokerInProgress: a delete the broker accepted and still
	// carries out when the admission budget ran out.
	ReasonBrokerInProgress = "BrokerInProgress"
)

// Reasoned is an error that names its own reason label (a rejection that
// passes a broker's answer on).
type Reasoned interface {
	error
	DecisionReason() string
}

var admissionDecisions = prometheus.NewCounterVec(prometheus.CounterOpts{
	Namespace: namespace,
	Subsystem: "admission",
	Name:      "decisions_total",
	Help: "Admission decisions of lockstep's validating webhooks, by kind, operation (CREATE, UPDATE, DELETE), " +
		"result (allowed, denied) and reason (Unchanged, DryRun, Broker, Detached when allowed; when denied, BrokerRefused, " +
		"BrokerUnavailable, BrokerOutcomeUnknown, BrokerInProgress for a broker's answer, else the Kubernetes status reason, " +
		"e.g. Invalid, Conflict).",
}, []string{"kind", "operation", "result", "reason"})

// AdmissionDecision counts one decision of a validating webhook.
func AdmissionDecision(kind, operation, result, reason string) {
	admissionDecisions.WithLabelValues(kind, operation, result, reason).Inc()
}

// ReasonOf is the reason label of a rejection: the reason of a Reasoned
// error (a broker's answer), else the Kubernetes status reason it carries
// (Invalid, Conflict, ServiceUnavailable, ...), or InternalError for an
// error that carries none.
func ReasonOf(err error) string {
	var reasoned Reasoned
	if errors.As(err, &reasoned) {
		return reasoned.DecisionReason()
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		if reason := status.Status().Reason; reason != "" {
			return string(reason)
		}
	}
	return "InternalError"
}
