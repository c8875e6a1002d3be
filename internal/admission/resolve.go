package admission

import (
	"context"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// lookup finds the broker objects a request names (catalog entry, plan,
// bound instance). It returns an empty Target, with the field errors
// saying why, when they cannot be found.
type lookup[T client.Object] interface {
	find(ctx context.Context, a *Attributes[T]) (*Target, field.ErrorList, error)
}

// targetResolver is the Resolver of both kinds: it resolves
// spec.parametersFrom first, then looks up what the request names at its
// broker, and returns both in one Target. Field errors of the parameters
// do not stop the look-up, so that both are reported at once; an error
// stops it.
type targetResolver[T client.Object] struct {
	params *parametersFrom[T]
	lookup lookup[T]
}

func (r *targetResolver[T]) Name() string { return "target" }

func (r *targetResolver[T]) Resolve(ctx context.Context, a *Attributes[T]) (*Target, field.ErrorList, admission.Warnings, error) {
	params, old, errs, err := r.params.resolve(ctx, a)
	if err != nil {
		return nil, nil, nil, err
	}
	t, lookupErrs, err := r.lookup.find(ctx, a)
	if err != nil {
		return nil, nil, nil, err
	}
	t.Params, t.OldParams = params, old
	return t, append(errs, lookupErrs...), nil, nil
}
