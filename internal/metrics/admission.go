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
// reason of the rejection (ReasonOf).
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
)

var admissionDecisions = prometheus.NewCounterVec(prometheus.CounterOpts{
	Namespace: namespace,
	Subsystem: "admission",
	Name:      "decisions_total",
	Help: "Admission decisions of lockstep's validating webhooks, by kind, operation (CREATE, UPDATE, DELETE), " +
		"result (allowed, denied) and reason (Unchanged, DryRun, Broker when allowed; the Kubernetes status reason, " +
		"e.g. Invalid, Conflict, ServiceUnavailable, when denied).",
}, []string{"kind", "operation", "result", "reason"})

// AdmissionDecision counts one decision of a validating webhook.
func AdmissionDecision(kind, operation, result, reason string) {
	admissionDecisions.WithLabelValues(kind, operation, result, reason).Inc()
}

// ReasonOf is the reason label of a rejection: the Kubernetes status reason
// it carries (Invalid, Conflict, ServiceUnavailable, ...), or InternalError
// for an error that carries none.
func ReasonOf(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		if reason := status.Status().Reason; reason != "" {
			return string(reason)
		}
	}
	return "InternalError"
}
