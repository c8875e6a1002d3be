// Package etcdstore is the broker's store on etcd, for running more than one
// broker replica against shared state.
//
// Transactions are optimistic: every read of a transaction is served at one
// etcd revision (a snapshot), and the commit is an etcd Txn that applies the
// writes only if nothing the transaction read changed since: each key read
// keeps its mod revision, and each prefix listed has no key modified after
// the snapshot (which also catches keys added to it). When the check fails
// the transaction runs again, as store.Store allows. This is the scheme of
// clientv3/concurrency's serializable STM, extended to prefix reads.
package etcdstore
