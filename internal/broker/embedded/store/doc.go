// Package store is the broker's persistence: a small transactional key/value
// interface (Store, Tx) with two backends, and the typed records the broker
// keeps in it (specs, instances, bindings, jobs, bundle state, runners, and
// the gone records of deleted instances and bindings).
//
// Backends live in sub-packages: bboltstore (an embedded file, the default)
// and etcdstore (etcd, for more than one broker replica). Both pass the same
// suite in storetest. Records are JSON; keys are laid out in keys.go.
package store
