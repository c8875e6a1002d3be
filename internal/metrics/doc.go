// Package metrics holds lockstep's Prometheus metrics, registered on
// controller-runtime's registry so that the manager serves them at /metrics
// (LOCKSTEP_METRICS_ADDR) next to controller-runtime's own:
//
//	lockstep_admission_decisions_total{kind, operation, result, reason}
//	lockstep_broker_request_duration_seconds{broker, verb, status}   (histogram)
//	lockstep_lock_contention_total{kind}
//	lockstep_operation_phase_transitions_total{phase}
//
// Each metric has one plain function to record it (AdmissionDecision,
// BrokerCall, LockContention, OperationPhase), so that a call site is one
// line. Label values are bounded sets (kinds, verbs, phases, HTTP status
// codes, Kubernetes status reasons, the names of the ServiceBrokers an
// administrator registered): never object names or users.
//
// Two collectors read their values at every scrape instead: the expiry of
// the webhook server's certificate (ServeCertificateExpiry) and what
// lockstep's objects say, from the manager's cache (ServeObjects): brokers'
// readiness and last catalog sync, the Ready and InSync conditions of
// instances and bindings (and of typed kinds' objects, from the informers
// of ServeTypedObjects), the journal's records by phase and the oldest
// one still under way.
package metrics
