package admission

import (
	"context"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// Attributes describe one admission request for an object of type T, as the
// steps of a chain see it: the request alone, which no step changes. What
// the request names (plan, instance, parameters from Secrets) is the
// Target, which the chain's Resolver returns.
type Attributes[T client.Object] struct {
	// Operation is CREATE, UPDATE or DELETE.
	Operation admissionv1.Operation
	// DryRun is true for `kubectl --dry-run=server`: run the static checks,
	// never call the broker, never write.
	DryRun bool
	// User is who asked.
	User authenticationv1.UserInfo
	// Old is the persisted object (nil on CREATE). On DELETE it is the
	// object being deleted.
	Old T
	// New is the object as it would be persisted (nil on DELETE).
	New T
}

// Object returns the object the request is about: New, or Old on DELETE.
func (a *Attributes[T]) Object() T {
	if a.Operation == admissionv1.Delete {
		return a.Old
	}
	return a.New
}

// attributesFrom builds Attributes from the admission request that
// controller-runtime stores in the context.
func attributesFrom[T client.Object](ctx context.Context, op admissionv1.Operation, old, new T) *Attributes[T] {
	a := &Attributes[T]{Operation: op, Old: old, New: new}
	if req, err := admission.RequestFromContext(ctx); err == nil {
		a.DryRun = req.DryRun != nil && *req.DryRun
		a.User = req.UserInfo
	}
	return a
}

// passThrough reports whether an UPDATE needs no checks and no broker call:
// the spec did not change (labels, annotations, finalizers, managedFields,
// owner references), or the object is already being deleted. A validator
// must never block finalizer removal, so nothing else is looked at.
func passThrough[T client.Object](a *Attributes[T], sameSpec func(old, new T) bool) bool {
	if a.Operation != admissionv1.Update {
		return false
	}
	if a.Old.GetDeletionTimestamp() != nil {
		return true
	}
	return sameSpec(a.Old, a.New)
}
