// Package binding is the controller of ServiceBindings, and the only writer
// of their status:
//
//   - binding.go: what it watches (bindings, their Secrets and their
//     BrokerOperations), and the order of one pass: the Secret adopted,
//     the status computed, written when it changed;
//   - status.go: what the journal says of the binding, and Ready from its
//     Secret;
//   - resync.go: the binding read again from its broker at a jittered
//     interval; drift is reported, never corrected (a binding cannot be
//     changed at a broker);
//   - finalizer.go: the lockstep.dev/broker finalizer of a binding being
//     deleted.
//
// It runs in the elected replica only.
package binding
