// Package credentials keeps a ServiceBinding's credentials in the one place
// they may be: the Secret spec.secretName in the binding's namespace, owned
// by the binding. It never logs, returns or formats a credential value, and
// it never overwrites a Secret that lockstep did not write for the binding.
//
// The Secret is written during admission, before the binding is persisted.
// It is marked with the binding's UID (label lockstep.dev/binding-uid) and
// gets its controller ownerReference once the binding exists (Adopt): an
// ownerReference to an object that does not exist yet would let the garbage
// collector delete the Secret as an orphan.
package credentials
