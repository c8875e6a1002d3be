package store

import (
	"context"
	"errors"
)

// ErrNotFound is returned by Tx.Get and the typed getters when a key is absent.
var ErrNotFound = errors.New("not found")

// ErrReadOnly is returned by Put and Delete inside a View transaction.
var ErrReadOnly = errors.New("write in a read-only transaction")

// Store is a transactional key/value store.
type Store interface {
	// View runs fn in a read-only transaction that sees one consistent
	// snapshot of the store.
	View(ctx context.Context, fn func(Tx) error) error
	// Update runs fn in a serializable read-write transaction and commits
	// its writes when fn returns nil. fn may run more than once (a backend
	// with optimistic concurrency re-runs it when another writer changed
	// what it read), so fn must have no effect outside tx.
	Update(ctx context.Context, fn func(Tx) error) error
	// Exclusive reports whether this process is the only one using the
	// store (an embedded file this process holds locked). When false, other
	// broker replicas may share it.
	Exclusive() bool
	// Close releases the store.
	Close() error
}

// Tx is one transaction.
type Tx interface {
	// Get returns the value of key, or ErrNotFound.
	Get(key string) ([]byte, error)
	// Put sets key to value.
	Put(key string, value []byte) error
	// Delete removes key; deleting an absent key is not an error.
	Delete(key string) error
	// List returns the entries whose key starts with prefix, in ascending
	// key order.
	List(prefix string) ([]KV, error)
}

// KV is one entry returned by Tx.List.
type KV struct {
	Key   string
	Value []byte
}
