package admission

// spec.parametersFrom: before it reads a Secret for a request, lockstep
// asks whether the requester may get that Secret themselves; then it
// reads it directly (get), never cached.
//
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get

import (
	"context"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// SecretAccess tells whether a user may read a Secret. lockstep reads the
// Secrets of spec.parametersFrom with its own rights; asking first keeps a
// user who may create instances, but not read a namespace's Secrets, from
// having them sent to a broker.
type SecretAccess interface {
	CanGetSecret(ctx context.Context, user authenticationv1.UserInfo, namespace, name string) (bool, error)
}

// SubjectAccessReviews asks the API server, with a SubjectAccessReview per
// Secret, whether the user may get it.
type SubjectAccessReviews struct {
	Client client.Client
}

// CanGetSecret implements SecretAccess.
func (s SubjectAccessReviews) CanGetSecret(ctx context.Context, user authenticationv1.UserInfo, namespace, name string) (bool, error) {
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range user.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user.Username, UID: user.UID, Groups: user.Groups, Extra: extra,
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: namespace, Verb: "get", Resource: "secrets", Name: name},
	}}
	if err := s.Client.Create(ctx, review); err != nil {
		return false, fmt.Errorf("asking the API server whether %q may get Secret %q: %w", user.Username, name, err)
	}
	return review.Status.Allowed, nil
}
