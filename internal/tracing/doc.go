// Package tracing is lockstep's OpenTelemetry tracing: off unless the
// standard OTEL_* variables ask for it (setup.go), and then one trace per
// change, from kube-apiserver's admission request to the broker's answer
// (span.go):
//
//   - lockstep.admission: a request to one of lockstep's webhooks, joined
//     to kube-apiserver's trace through the W3C traceparent the API server
//     sends (server span);
//   - lockstep.checks: the static checks of a validating webhook;
//   - lockstep.lock: taking the object's lock, the Lease that carries the
//     operation's record (the one API server write before the broker);
//   - lockstep.broker: one broker call of an operation, with its polls;
//   - osb.<request>: each request to a broker (osb.provision,
//     osb.instance_last_operation, ...; client spans), which carries the
//     traceparent to the broker;
//   - osb.poll: the last_operation polls of an asynchronous operation;
//   - lockstep.record: writing the operation's record after the reply;
//   - lockstep.follow: the operations reconciler following an operation
//     after admission (asking how it ended, undoing an orphan), in the
//     trace of the admission that started it (its record keeps the
//     traceparent);
//   - lockstep.resync: an object read again from its broker and compared.
//
// Spans carry names, ids, verbs, phases and statuses: never a parameter
// value, a credential, a broker's description or an error message (which
// may quote either). docs/tracing.md lists every span and attribute.
//
// Built with the tag lockstep_notracing (notracing.go), every function
// does nothing: the benchmark suite measures tracing off against that.
package tracing
