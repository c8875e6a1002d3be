// Package suite is lockstep's benchmark suite. Each benchmark
// measures lockstep and its baseline in the same run, alternating, and
// returns a report.Section with p50/p99 latency, throughput and their
// ratio, and the targets with what was measured:
//
//   - Admission: real AdmissionReviews over TLS to lockstep's webhook
//     server at fixed concurrency levels, against an allow-all
//     controller-runtime webhook server with the same TLS setup;
//   - EndToEnd: updates and rejected create-only changes through the real
//     kube-apiserver with lockstep's webhooks, against the same CRD without
//     webhooks and with the create-only rule as a CEL transition rule;
//   - Typed: typed kinds, with a test broker of many services with
//     schemas: a change of a create-only parameter of a typed kind,
//     answered by lockstep's precheck, against the transition rule
//     lockstep generates (the path before the precheck) and the
//     end-to-end benchmark's hand-written CEL rule; a change with several
//     errors of both sorts answered once, against the two rounds it took
//     before; the time from
//     activating a service on its ServiceBroker to its kind established
//     and served; and `kubectl api-resources` and lockstep's memory with
//     every service activated against none;
//   - BrokerPath: provision, update and deprovision through lockstep's
//     validating webhook (lock, journal, broker call) against the same
//     calls made directly to the same test broker, at fixed broker
//     latencies;
//   - Tracing: the broker path at 0s broker latency through three lockstep
//     processes at once: built without tracing, with tracing off, with
//     tracing on (spans exported over OTLP to a collector in the
//     benchmark's process);
//   - Journal: many ServiceInstances created and deleted with a short
//     operation retention, and how many BrokerOperations the cluster
//     holds meanwhile and afterwards;
//   - Burst: a GitOps-sized burst: many ServiceInstances of lockstep's
//     embedded broker and a ServiceBinding of each applied at once by
//     concurrent clients with server-side apply (refusals sent again after
//     a back-off), until all are Ready, then deleted the same way and once
//     as one namespace, against the same objects without webhooks and the
//     write-ahead floor;
//   - Scale: admission latency with a small and a large catalog, and
//     with many instances lockstep's memory, its start-up reconcile time
//     and what a resync pass costs (broker fetches per second against
//     the limit, API server writes, CPU, memory);
//   - Embedded: the embedded broker's provisions and binds per second on
//     its bbolt store, empty and full, and spec reconciliation of many
//     specs;
//   - Micro: the Go benchmarks of the policy engine and the
//     parameter-schema checks, with allocation counts.
//
// lockstep runs under the service account and ClusterRole of deploy/, as a
// deployment does. Sizes says how big each benchmark is: Full for `make bench`, Tiny for the
// test that proves the harness works. Every load loop is bounded in count
// and time, and targets loopback only.
package suite
