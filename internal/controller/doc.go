// Package controller holds lockstep's controllers, one package per concern;
// each kind's status has exactly one writer:
//
//   - operations: takes every BrokerOperation to a final phase (follows
//     it at the broker, commits it once the API server persisted its
//     object, compensates it when the object never persisted); it writes
//     records, never the status of their objects;
//   - brokered: the one reconciler of broker-backed objects, the only
//     writer of their status and their finalizer; instance and binding
//     say what is particular to ServiceInstances and ServiceBindings (a
//     binding's Secret: its owner reference, Ready, its removal);
//   - servicebroker: loads every catalog into admission's cache and writes
//     ServiceBroker status; it runs on every replica;
//   - marketplace: the only writer of ServiceOfferings and ServicePlans,
//     from the catalogs servicebroker loaded;
//   - resync: what brokered needs to compare an object with
//     what its broker holds (comparison, per-broker limits, schedule);
//   - typedkinds: runs instance's reconciler on the objects of each typed
//     kind while the kind's CRD is established, started and stopped at
//     run time.
//
// All but servicebroker run in the elected replica only.
package controller
