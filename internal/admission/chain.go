package admission

import (
	"context"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// Check is one static check of the request alone (its fields, its spec,
// the registered hooks). It does no I/O beyond in-memory caches and reports
// every problem it finds, so that a person sees all of them at once.
type Check[T client.Object] interface {
	// Name identifies the check in logs and metrics.
	Name() string
	// Check returns the field errors and warnings for the request. An error
	// means the request cannot be judged now (a read that failed, a
	// conflict with another object); it rejects the request at once with
	// its own status.
	Check(ctx context.Context, a *Attributes[T]) (field.ErrorList, admission.Warnings, error)
}

// Resolver finds what a request names: the parameters that
// spec.parametersFrom resolves to, the broker's catalog entry, the plan,
// the bound instance. It returns them as a Target for the checks and steps
// after it, which only read it. A Target that could not be resolved in full
// comes back with the field errors saying why; its missing parts are nil,
// so that the later checks still report their own problems.
type Resolver[T client.Object] interface {
	// Name identifies the resolver in logs and metrics.
	Name() string
	// Resolve returns the request's Target, never nil unless the error
	// is set, and the field errors and warnings of resolving it. An error
	// rejects the request at once with its own status, as a Check's does.
	Resolve(ctx context.Context, a *Attributes[T]) (*Target, field.ErrorList, admission.Warnings, error)
}

// TargetCheck is one static check of the request against what the
// Resolver found (a plan the catalog removed, a plan change the catalog
// forbids, parameters against the plan's schemas, an instance not ready
// to bind). It reads t and never changes it.
type TargetCheck[T client.Object] interface {
	// Name identifies the check in logs and metrics.
	Name() string
	// Check returns the field errors and warnings for the request, as
	// Check.Check does.
	Check(ctx context.Context, a *Attributes[T], t *Target) (field.ErrorList, admission.Warnings, error)
}

// Limit is one check of what the cluster would refuse after lockstep
// allowed (the namespace's ResourceQuotas, the broker's per-plan limits):
// a refusal there would come after the broker call, and turn the broker's
// work into waste. Limits run once every static check passed, dry runs
// included, before the broker steps; the first refusal answers with its
// own status. A Limit may hold what the request takes (a quota's unit)
// until release is called, once, with whether the request was allowed.
type Limit[T client.Object] interface {
	// Name identifies the limit in logs and metrics.
	Name() string
	// Limit refuses the request, or returns release (nil: nothing held).
	Limit(ctx context.Context, a *Attributes[T], t *Target) (release func(allowed bool), err error)
}

// Step is one step of the broker phase. Steps run in order, after every
// static check passed, and never for a dry run. They get the Target in
// full (every static check passed) and only read it. An error rejects the
// request; an error that is an apierrors.APIStatus keeps its HTTP code.
type Step[T client.Object] interface {
	// Name identifies the step in logs and metrics.
	Name() string
	// Admit carries out the step.
	Admit(ctx context.Context, a *Attributes[T], t *Target) (admission.Warnings, error)
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
