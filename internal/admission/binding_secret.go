package admission

import (
	"context"
	"errors"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lockstep-dev/lockstep/internal/credentials"
)

// bindingSecret refuses a bind whose Secret name is taken by a Secret
// lockstep did not write for this binding, before the broker is called. It
// runs after the instance check, whose refusals come first; a bind refused
// already for its instance (a binding applied with its instance, before
// the instance exists) reads no Secret.
type bindingSecret struct {
	reader client.Reader
}

func (c *bindingSecret) Name() string { return "secret" }

func (c *bindingSecret) Check(ctx context.Context, a *Attributes[Binding], t *Target) (field.ErrorList, admission.Warnings, error) {
	if a.Operation != admissionv1.Create || !t.found() {
		return nil, nil, nil // no bind to make: the Resolver reported why, and the name is not read
	}
	err := credentials.CheckFree(ctx, c.reader, a.New)
	var taken *credentials.TakenError
	switch {
	case errors.As(err, &taken):
		return nil, nil, statusError(http.StatusConflict, metav1.StatusReasonAlreadyExists,
			"cannot bind %q: %v; nothing was changed and the broker was not called", a.New.Name, err)
	case err != nil:
		return nil, nil, unavailable("cannot bind %q: %v; nothing was changed: retry", a.New.Name, err)
	}
	return nil, nil, nil
}
