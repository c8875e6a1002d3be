// Package controller holds lockstep's controllers, one package per concern;
// each kind's status has exactly one writer:
//
//   - operations: takes every BrokerOperation to a final phase (follows
//     it at the broker, commits it once the API server persisted its
//     object, compensates it when the object never persisted); it writes
//     records, never the status of their objects;
//   - instance: the only writer of ServiceInstance status (from the
//     journal, and from resync), and the instances' finalizer;
//   - binding: the only writer of ServiceBinding status, the Secret's
//     owner reference, and the bindings' finalizer;
//   - servicebroker: loads every catalog into admission's cache and writes
//     ServiceBroker status; it runs on every replica;
//   - marketplace: the only writer of ServiceOfferings and ServicePlans,
//     from the catalogs servicebroker loaded;
//   - brokered: what instance and binding share: Finalize, lockstep's
//     finalizer for an object being deleted, and PatchStatus, the one way
//     their status is written;
//   - resync: what instance and binding need to compare an object with
//     what its broker holds (comparison, per-broker limits, schedule).
//
// All but servicebroker run in the elected replica only.
package controller
