// Package storetest is the suite every store.Store backend must pass: key
// and value semantics, transaction isolation (lost updates and phantoms),
// rollback, persistence across reopen, and the typed records.
package storetest
