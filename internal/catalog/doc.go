// Package catalog keeps every ServiceBroker's OSB catalog in memory for
// admission, so that the hot path never waits on a broker round trip.
//
// The ServiceBroker controller (internal/controller/servicebroker) fetches a
// broker's catalog when its ServiceBroker appears or changes and again
// every spec.relistInterval; an Entry compiles the plans' parameter schemas
// once and keeps plans that left the catalog while instances still use them
// (marked removed: no new provisions, but updates and deletes go on).
//
// Admission reads the Cache: Wait blocks, within the caller's deadline,
// until a broker's first catalog is loaded; Refresh refetches at most once
// per interval when a request names a service or plan the cached catalog
// does not know.
package catalog

// A broker's client reads the Secret its ServiceBroker's authSecretRef
// names, directly (lockstep does not cache the cluster's Secrets).
//
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
