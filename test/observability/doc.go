// Package observability tests what operators watch lockstep with, against
// a running lockstep: a real kube-apiserver and etcd (test/framework) with
// a tracing configuration that sends its spans to an OTLP receiver in the
// test's process, lockstep in-process sending its own there too
// (OTEL_* variables) and serving /metrics, test brokers over HTTP, and
// the real kubectl.
//
//   - selectors_test.go: every selector of the alerting rules and the
//     dashboard (deploy/monitoring) matches series lockstep serves, by
//     label values, with a typed kind active and brokers that refuse, hang
//     and drift;
//   - tracing_test.go: one trace from kube-apiserver's admission request
//     through lockstep's webhook to the broker's request, the polls of an
//     asynchronous operation and the operations reconciler's follow-ups,
//     with the span names docs/tracing.md lists; no span holds a parameter
//     value or a credential.
package observability
