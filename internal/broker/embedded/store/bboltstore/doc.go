// Package bboltstore is the broker's default store: one bbolt file, locked
// by the process that opens it, with serializable read-write transactions.
// It survives restarts; it cannot be shared by two broker processes (use
// etcdstore for replicas).
package bboltstore
