package admission

import (
	"context"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// DefaultMaxParametersBytes is how large the parameters sent to a broker
// may be unless configured otherwise (LOCKSTEP_MAX_PARAMETERS_BYTES).
const DefaultMaxParametersBytes = 64 << 10

// parametersSize refuses parameters larger than max before any broker
// call: a broker (or a proxy before it) answers an oversized request with
// a page of its own, and lockstep would send the whole of it first. It
// measures what would be sent: spec.parameters with the Secrets of
// spec.parametersFrom merged in, on a create, and on an update that sends
// parameters (sends).
type parametersSize[T client.Object] struct {
	max int
	// own is the object's spec.parameters.
	own func(T) *runtime.RawExtension
	// sends reports whether an update sends the parameters.
	sends func(old, new T) bool
}

func (c *parametersSize[T]) Name() string { return "parameters-size" }

func (c *parametersSize[T]) Check(_ context.Context, a *Attributes[T], t *Target) (field.ErrorList, admission.Warnings, error) {
	size, refused := c.refuses(a, t)
	if !refused {
		return nil, nil, nil
	}
	return field.ErrorList{field.Invalid(field.NewPath("spec", "parameters"), fmt.Sprintf("%d bytes", size),
		fmt.Sprintf("lockstep sends at most %d bytes of parameters to a broker (LOCKSTEP_MAX_PARAMETERS_BYTES, the parameters from Secrets included); nothing was sent: make them smaller", c.max))}, nil, nil
}

// refuses reports whether the check refuses the request's parameters,
// and their size. The schema checks ask it too: parameters this check
// refuses are not checked against the plan's schemas, whose cost grows
// with them (the refusal is the answer).
func (c *parametersSize[T]) refuses(a *Attributes[T], t *Target) (int, bool) {
	if c == nil || c.max <= 0 || a.Operation == admissionv1.Delete {
		return 0, false
	}
	params := mergedParams(t.Params, c.own(a.New))
	if params == nil || len(params.Raw) <= c.max {
		return 0, false // the usual case: decided without comparing anything
	}
	if a.Operation == admissionv1.Update && (c.sends == nil || !c.sends(a.Old, a.New)) {
		return 0, false
	}
	return len(params.Raw), true
}
