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

// The binding reconciler adds and removes the lockstep.dev/broker
// finalizer (patch), writes status, and watches the credential Secrets it
// wrote: only those labelled lockstep.dev/binding-uid are in its cache
// (RBAC cannot restrict by label). It lets the binding adopt its Secret
// (patch: ownerReference), removes it after unbind (delete), and finds by
// label the Secrets of a binding that never persisted (list).
//
// +kubebuilder:rbac:groups=lockstep.dev,resources=servicebindings,verbs=list;watch;patch
// +kubebuilder:rbac:groups=lockstep.dev,resources=servicebindings/status,verbs=patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=list;watch;patch;delete
