// Package journal holds the records of lockstep's broker operations and the
// lock that keeps them one at a time per object, so that what the broker
// holds equals what the API server holds:
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
//   - latest.go: what an object's records say of it, for the controller
//     that writes its status.
//
// Admission writes records and takes locks; the controllers in
// internal/controller follow, commit and compensate them (see
// docs/design.md, "After admission").
package journal
