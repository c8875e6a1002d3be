package admission

import (
	"context"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lockstep-dev/lockstep/internal/validate"
)

// fieldPolicy enforces the create-only and read-only tags of the kind's Go
// type (see api/v1alpha1): compiled once per type by internal/validate.
func fieldPolicy[T client.Object]() Check[T] {
	return CheckFunc[T]{CheckName: "field-policy", Fn: func(_ context.Context, a *Attributes[T]) (field.ErrorList, admission.Warnings, error) {
		if a.Operation == admissionv1.Create {
			return validate.ValidateCreate(a.New), nil, nil
		}
		return validate.ValidateUpdate(a.Old, a.New), nil, nil
	}}
}

// hookCheck runs the extra checks registered for the kind.
func hookCheck[T client.Object](hooks *validate.Hooks[T]) Check[T] {
	return CheckFunc[T]{CheckName: "hooks", Fn: func(_ context.Context, a *Attributes[T]) (field.ErrorList, admission.Warnings, error) {
		if hooks == nil {
			return nil, nil, nil
		}
		errs, warnings := hooks.Run(a.Old, a.New)
		return errs, warnings, nil
	}}
}
