// Package binding is what is particular to ServiceBindings in the
// reconciler of broker-backed objects (internal/controller/brokered):
//
//   - binding.go: the Kind, and New, the controller of ServiceBindings;
//     it also watches the bindings' Secrets, and its finalizer deletes a
//     binding's Secret once the broker no longer holds the binding;
//   - status.go: what the journal says of the binding, and Ready from its
//     Secret;
//   - resync.go: what resync compares (the parameters); drift is
//     reported, never corrected (a binding cannot be changed at a broker).
package binding
