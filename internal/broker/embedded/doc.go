// Package osb is lockstep's embedded Open Service Broker: a real OSB v2.17
// broker whose service offerings are bundles (a manifest plus executable
// actions) taken from registries.
//
// New wires the parts together and returns a Broker, an http.Handler that
// serves the OSB API (and /healthz). Start runs the background loops:
// registry sync (at once, then every SyncPeriod), sweep of unused marked
// specs, recovery of jobs whose broker process stopped and pruning of the
// records of deleted instances and bindings (every SweepPeriod), the runner heartbeat, and the end of bootstrapping after
// BootstrapTimeout. Sync, Sweep and Recover can also be called directly,
// which is how tests drive the broker deterministically. Close stops the
// loops, lets running jobs finish for ShutdownGrace, and waits for every
// goroutine.
//
// The handler also serves /healthz (with the catalog sync status of every
// registry) and /metrics (Prometheus, a registry of its own per Broker).
//
// Settings is the same configuration in envconfig form (cmd/broker reads it
// with the prefix LOCKSTEP_BROKER_).
//
// Sub-packages, in dependency order: store (and its backends), bundle,
// executor, registry, specs (reconciliation), jobs (runner), lifecycle (OSB
// semantics), server (HTTP).
package embedded
