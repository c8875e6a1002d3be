package admission

import (
	"context"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lockstep-dev/lockstep/internal/credentials"
)

// bindingTransforms refuses, before the broker is called, a bind whose
// secret transforms copy keys from a Secret that does not exist or that
// the requester may not get: lockstep reads it with its own rights, and
// copies a Secret's values only for users who may read it themselves.
// What else a transform needs is checked statically (validate) and, for
// the credentials' keys, when the Secret is written.
type bindingTransforms struct {
	secrets client.Reader
	// access, when set, is asked whether the requester may get each
	// Secret.
	access Authorizer
}

func (c *bindingTransforms) Name() string { return "secret-transforms" }

func (c *bindingTransforms) Check(ctx context.Context, a *Attributes[Binding], _ *Target) (field.ErrorList, admission.Warnings, error) {
	if a.Operation != admissionv1.Create {
		return nil, nil, nil
	}
	b := a.New
	var errs field.ErrorList
	for i, t := range b.Spec.SecretTransforms {
		if t.AddKeysFrom == nil {
			continue
		}
		p := field.NewPath("spec", "secretTransforms").Index(i).Child("addKeysFrom", "secretRef", "name")
		name := t.AddKeysFrom.SecretRef.Name
		if c.access != nil {
			ok, err := mayGetSecret(ctx, c.access, a.User, b.Namespace, name)
			if err != nil {
				return nil, nil, unavailable("%v; nothing was changed and the broker was not called: retry", err)
			}
			if !ok {
				errs = append(errs, field.Forbidden(p, fmt.Sprintf(
					"user %q may not get Secret %q in namespace %q, and lockstep copies a Secret's keys only for users who may read it themselves; "+
						"ask for get on it (RBAC), or name another Secret", a.User.Username, name, b.Namespace)))
				continue
			}
		}
		err := c.secrets.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: name}, credentials.NewMetadata())
		switch {
		case apierrors.IsNotFound(err):
			errs = append(errs, field.NotFound(p, name))
		case err != nil:
			return nil, nil, unavailable("cannot read Secret %q: %v; nothing was changed and the broker was not called: retry", name, err)
		}
	}
	return errs, nil, nil
}
