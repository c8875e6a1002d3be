package metrics

import "github.com/prometheus/client_golang/prometheus"

var lockContention = prometheus.NewCounterVec(prometheus.CounterOpts{
	Namespace: namespace,
	Subsystem: "lock",
	Name:      "contention_total",
	Help: "Changes refused with 409 because another broker operation on the same object held its lock, " +
		"by kind (ServiceInstance, ServiceBinding).",
}, []string{"kind"})

var operationPhases = prometheus.NewCounterVec(prometheus.CounterOpts{
	Namespace: namespace,
	Subsystem: "operation",
	Name:      "phase_transitions_total",
	Help: "BrokerOperations that entered a phase (Pending, InProgress, Succeeded, Failed, Committed, Orphaned, " +
		"Compensated), by phase.",
}, []string{"phase"})

var operationsPruned = prometheus.NewCounterVec(prometheus.CounterOpts{
	Namespace: namespace,
	Subsystem: "operation",
	Name:      "records_pruned_total",
	Help: "Final BrokerOperations removed from the journal, by reason: kept (beyond the newest LOCKSTEP_KEEP_OPERATIONS of " +
		"an object) or expired (of an object that no longer exists, older than LOCKSTEP_OPERATION_RETENTION).",
}, []string{"reason"})

// OperationPruned counts one final record removed from the journal.
func OperationPruned(reason string) {
	operationsPruned.WithLabelValues(reason).Inc()
}

// LockContention counts one change refused because another operation held
// the object's lock.
func LockContention(kind string) {
	lockContention.WithLabelValues(kind).Inc()
}

// OperationPhase counts one BrokerOperation entering phase.
func OperationPhase(phase string) {
	operationPhases.WithLabelValues(phase).Inc()
}
