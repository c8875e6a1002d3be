// Package journal keeps track of lockstep's broker operations, so that what
// the broker holds equals what the API server holds:
//
//   - journal.go: the BrokerOperation records, written before every broker
//     call (write-ahead) and updated with the broker's answer;
//   - where.go: where records and locks live (locks in lockstep's own
//     namespace; records next to their object, or in lockstep's namespace
//     when the object's namespace is being deleted);
//   - lease.go: the lock across webhook replicas, one coordination.k8s.io
//     Lease per object, which expires when its holder dies (but not while
//     the holder's record is Pending: the lock naming a Pending record is
//     what tells that it reached the broker);
//   - operations.go: the reconciler that follows operations still running,
//     commits those whose object the API server persisted, and compensates
//     those whose object never persisted; an operation whose outcome the
//     broker could not tell stays in progress and is asked about again (see
//     docs/design.md, "After admission");
//   - finalizer.go, binding_finalizer.go: the lockstep.dev/broker
//     finalizers, which finish deletes and carry out deletes that bypassed
//     admission; the binding reconciler also adopts the binding's Secret and
//     writes its Ready condition.
package journal
