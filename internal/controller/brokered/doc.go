// Package brokered is the one reconciler of broker-backed objects
// (ServiceInstances and ServiceBindings today), and the only writer of
// their status. A Reconciler is parameterized by a Kind, which says what
// differs between kinds; the order of a pass is the same for all:
//
//   - reconciler.go: what it watches (the objects, their
//     BrokerOperations, what the kind adds), and one pass: an object being
//     deleted is finalized; any other gets into its status what the
//     journal says, when due what its broker holds, and what the kind
//     observes besides, written when it changed;
//   - kind.go: Kind, what is particular to one kind (how to read its
//     instance, build its broker calls, compare it, what it does about
//     drift, what its finalizer releases);
//   - resync.go: the object read again from its broker at a jittered
//     interval, within per-broker limits, and compared with what lockstep
//     last applied: InSync, Ready=False while the broker no longer holds
//     it, events and metrics;
//   - finalize.go: the lockstep.dev/broker finalizer of an object being
//     deleted, which removes it at the broker first when its delete
//     bypassed admission;
//   - status.go: PatchStatus, the one way their status is written.
//
// The kinds are internal/controller/instance (ServiceInstances, and the
// objects of typed kinds as their model, see .../typedkinds) and
// .../binding. It runs in the elected replica only.
package brokered
