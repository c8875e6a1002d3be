// Package journal holds the records of lockstep's broker operations and the
// lock that keeps them one at a time per object, so that what the broker
// holds equals what the API server holds:
//
//   - run.go: the lock and the record of one broker operation,
//     Carrier.Run: the object's lock is the one API server write before
//     the broker call, and carries the operation's record; the record,
//     with the broker's answer, is written after the reply (After); crash
//     points for tests. The call itself, and what its answer means, are
//     internal/brokercall's;
//   - carried.go: the record a lock carries, and Restore, which writes it
//     when lockstep stopped before it did;
//   - journal.go: the BrokerOperation records and their answers; Change and
//     Applies, the one definition of "the same change" and "the same spec"
//     between a record and an object;
//   - where.go: where records and locks live (locks in lockstep's own
//     namespace; records next to their object, or in lockstep's namespace
//     when the object's namespace is being deleted);
//   - lease.go: the lock across webhook replicas, one coordination.k8s.io
//     Lease per object, keyed on its kind and external id (so that two
//     objects that name one id share it), which expires when its holder
//     dies (but not while its record is unwritten or Pending: the lock is
//     then the only trace that the broker may have acted);
//   - count.go: the API server writes an operation waited for;
//   - latest.go: what an object's records say of it, for the controller
//     that writes its status.
//
// Every journaled broker call goes through Run, by way of
// internal/brokercall (admission, resync's corrections, the finalizers);
// the controllers in internal/controller follow, commit and compensate
// them (see docs/design.md, "After admission").
package journal
