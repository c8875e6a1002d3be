// Package metrics holds lockstep's Prometheus metrics, registered on
// controller-runtime's registry so that the manager serves them at /metrics
// (LOCKSTEP_METRICS_ADDR) next to controller-runtime's own:
//
//	lockstep_admission_decisions_total{kind, operation, result, reason}
//	lockstep_broker_request_duration_seconds{verb, status}   (histogram)
//	lockstep_lock_contention_total{kind}
//	lockstep_operation_phase_transitions_total{phase}
//
// Each metric has one plain function to record it (AdmissionDecision,
// BrokerCall, LockContention, OperationPhase), so that a call site is one
// line. Label values are bounded sets (kinds, verbs, phases, HTTP status
// codes, Kubernetes status reasons): never object names or users.
package metrics
