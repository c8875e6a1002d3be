package admission

// lockstep acts with its own rights; where a request asks it to act on
// something beyond the object itself, it first asks the API server whether
// the requester may (SubjectAccessReview): get each Secret that
// spec.parametersFrom names, adopt what a broker holds, get the object that
// holds an external id before a refusal names it.
//
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

import (
	"context"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Authorizer tells whether a user may do something, as the API server
// would decide it for the user's own request.
type Authorizer interface {
	Allowed(ctx context.Context, user authenticationv1.UserInfo, attrs authorizationv1.ResourceAttributes) (bool, error)
}

// SubjectAccessReviews asks the API server, with one SubjectAccessReview
// per question.
type SubjectAccessReviews struct {
	Client client.Client
}

// Allowed implements Authorizer.
func (s SubjectAccessReviews) Allowed(ctx context.Context, user authenticationv1.UserInfo, attrs authorizationv1.ResourceAttributes) (bool, error) {
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range user.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user.Username, UID: user.UID, Groups: user.Groups, Extra: extra, ResourceAttributes: &attrs,
	}}
	if err := s.Client.Create(ctx, review); err != nil {
		return false, fmt.Errorf("asking the API server whether %q may %s %s %q: %w", user.Username, attrs.Verb, resourceName(attrs), attrs.Name, err)
	}
	return review.Status.Allowed, nil
}

// allowed asks access, or allows when nobody is to be asked (nil).
func allowed(ctx context.Context, access Authorizer, user authenticationv1.UserInfo, attrs authorizationv1.ResourceAttributes) (bool, error) {
	if access == nil {
		return true, nil
	}
	return access.Allowed(ctx, user, attrs)
}

// resourceName is a resource as kubectl spells it: "secrets",
// "serviceinstances.lockstep.dev".
func resourceName(attrs authorizationv1.ResourceAttributes) string {
	if attrs.Group == "" {
		return attrs.Resource
	}
	return attrs.Resource + "." + attrs.Group
}
