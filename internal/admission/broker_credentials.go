package admission

import (
	"context"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// brokerCredentials refuses a ServiceBroker whose spec.authSecretRef
// lockstep may not use: lockstep reads a broker's credentials with its own
// rights, and sends them to the URL the ServiceBroker names, so that
// anyone who could point a ServiceBroker at a Secret and at a server of
// theirs would read the Secret through lockstep. The Secret must be in
// lockstep's own namespace (out of every user's), and the writer must be
// allowed to get it (a SubjectAccessReview). It judges a create with a
// reference, and an update that changes the reference or the URL; the
// API server's rule on the CRD refuses credentials over plain http.
//
// old is nil on CREATE.
func (g *BrokerGuard) brokerCredentials(ctx context.Context, user authenticationv1.UserInfo, old, cur *v1alpha1.ServiceBroker) admission.Response {
	ref := cur.Spec.AuthSecretRef
	if ref == nil || (old != nil && old.Spec.AuthSecretRef != nil && *old.Spec.AuthSecretRef == *ref && old.Spec.URL == cur.Spec.URL) {
		return admission.Allowed("")
	}
	path := field.NewPath("spec", "authSecretRef")
	if ref.Namespace != g.Namespace {
		status := invalid(v1alpha1.GroupVersion.WithKind("ServiceBroker").GroupKind(), cur.Name, field.ErrorList{field.Invalid(path.Child("namespace"), ref.Namespace, fmt.Sprintf(
			"lockstep reads a broker's credentials only from its own namespace %q, out of the users' namespaces; put the Secret there "+
				"(kubectl create secret generic %s -n %s --from-literal=username=... --from-literal=password=...) and name that namespace",
			g.Namespace, ref.Name, g.Namespace))}).Status()
		return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false, Result: &status}}
	}
	ok, err := allowed(ctx, g.Access, user, authorizationv1.ResourceAttributes{Namespace: ref.Namespace, Verb: "get", Resource: "secrets", Name: ref.Name})
	if err != nil {
		return admission.Errored(http.StatusServiceUnavailable, fmt.Errorf("%w; the ServiceBroker stays as it was: retry", err))
	}
	if !ok {
		return admission.Response{AdmissionResponse: admissionResponse(http.StatusForbidden, metav1.StatusReasonForbidden, fmt.Sprintf(
			"ServiceBroker %q: user %q may not get Secret %q in namespace %q, and lockstep sends a broker's credentials only for a writer who may read them; "+
				"ask for get on it (RBAC), or name another Secret; the ServiceBroker stays as it was",
			cur.Name, user.Username, ref.Name, ref.Namespace))}
	}
	return admission.Allowed("")
}
