package admission

import (
	"context"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// Check is one static check of the validating chain. It does no I/O beyond
// in-memory caches and reports every problem it finds, so that a person sees
// all of them at once.
type Check[T client.Object] interface {
	// Name identifies the check in logs and metrics.
	Name() string
	// Check returns the field errors and warnings for the request. An error
	// means the request cannot be judged now (a catalog not loaded yet, a
	// conflict with another object); it rejects the request at once with
	// its own status.
	Check(ctx context.Context, a *Attributes[T]) (field.ErrorList, admission.Warnings, error)
}

// Step is one step of the broker phase. Steps run in order, after every
// static check passed, and never for a dry run. An error rejects the
// request; an error that is an apierrors.APIStatus keeps its HTTP code.
type Step[T client.Object] interface {
	// Name identifies the step in logs and metrics.
	Name() string
	// Admit carries out the step.
	Admit(ctx context.Context, a *Attributes[T]) (admission.Warnings, error)
}

// CheckFunc adapts a function to a Check.
type CheckFunc[T client.Object] struct {
	CheckName string
	Fn        func(ctx context.Context, a *Attributes[T]) (field.ErrorList, admission.Warnings, error)
}

// Name implements Check.
func (c CheckFunc[T]) Name() string { return c.CheckName }

// Check implements Check.
func (c CheckFunc[T]) Check(ctx context.Context, a *Attributes[T]) (field.ErrorList, admission.Warnings, error) {
	return c.Fn(ctx, a)
}
