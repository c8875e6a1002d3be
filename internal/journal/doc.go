// Package journal keeps track of lockstep's broker operations: the
// per-object lock that lets at most one operation per object reach the
// broker, the record of deletes the broker confirmed, and the finalizer
// reconciler that finishes deletes (and carries out deletes that bypassed
// admission).
//
// Today the lock and the record live in this process's memory; the
// cross-replica lock and the BrokerOperation journal build on the same
// types (see DESIGN.md, "After admission: commit or compensate").
package journal
