package admission

import (
	"context"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/typed/render"
)

// adoptAccess refuses an adoption by a requester without the permission
// to adopt: the verb "adopt" on the object's resource in its namespace
// (v1alpha1.PermissionAdopt), which the ClusterRole lockstep-adopt grants.
// The resource of an object of a typed kind is its kind's own (group
// services.lockstep.dev, the kind's plural), so that who may adopt is
// said per service, as who may create is.
// Adopting takes over what a broker holds, made by another platform or
// before lockstep was there, so the right to create instances or bindings
// does not imply it. Asked before anything else of the request (the
// refusal tells nothing about the external id), dry runs included.
type adoptAccess[T client.Object] struct {
	access Authorizer
	kind   v1alpha1.TargetKind
}

func (c *adoptAccess[T]) Name() string { return "adopt-permission" }

func (c *adoptAccess[T]) Check(ctx context.Context, a *Attributes[T]) (field.ErrorList, admission.Warnings, error) {
	obj := a.New
	if a.Operation != admissionv1.Create || !v1alpha1.Adopting(obj) {
		return nil, nil, nil
	}
	group, resource := adoptedResource(ctx, c.kind)
	attrs := authorizationv1.ResourceAttributes{Namespace: obj.GetNamespace(), Verb: v1alpha1.PermissionAdopt,
		Group: group, Resource: resource, Name: obj.GetName()}
	ok, err := allowed(ctx, c.access, a.User, attrs)
	if err != nil {
		return nil, nil, unavailable("%v; nothing was created and the broker was not called: retry", err)
	}
	if ok {
		return nil, nil, nil
	}
	return nil, nil, statusError(http.StatusForbidden, metav1.StatusReasonForbidden,
		"user %q may not adopt: %s=true takes over what the broker already holds, which needs the permission %q on %s in namespace %q; "+
			"nothing was created and the broker was not called; a cluster administrator grants it with: "+
			"kubectl create rolebinding %s --clusterrole=%s --user=%s -n %s; or remove the annotation to create a new %s",
		a.User.Username, v1alpha1.AnnotationAdopt, v1alpha1.PermissionAdopt, resourceName(attrs), obj.GetNamespace(),
		v1alpha1.AdoptRole, v1alpha1.AdoptRole, a.User.Username, obj.GetNamespace(), kindWord(c.kind))
}

// adoptedResource is the group and resource of the object a request of
// the chain of kind adopts: the request's own for an object of a typed
// kind, else kind's resource in lockstep.dev.
func adoptedResource(ctx context.Context, kind v1alpha1.TargetKind) (group, resource string) {
	if req, err := admission.RequestFromContext(ctx); err == nil && req.Resource.Group == render.Group && req.Resource.Resource != "" {
		return req.Resource.Group, req.Resource.Resource
	}
	return v1alpha1.GroupVersion.Group, resourceOf(kind)
}
