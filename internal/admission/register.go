package admission

import (
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// The paths lockstep serves its webhooks on; deploy/webhook uses the same.
const (
	MutateInstancePath   = "/mutate-lockstep-dev-v1alpha1-serviceinstance"
	ValidateInstancePath = "/validate-lockstep-dev-v1alpha1-serviceinstance"
	MutateBindingPath    = "/mutate-lockstep-dev-v1alpha1-servicebinding"
	ValidateBindingPath  = "/validate-lockstep-dev-v1alpha1-servicebinding"
	ValidateStatusPath   = "/validate-lockstep-dev-v1alpha1-status"
)

// Handlers are the four handlers lockstep serves.
type Handlers struct {
	InstanceDefaulter *Defaulter[Instance]
	InstanceValidator *Validator[Instance]
	BindingDefaulter  *Defaulter[Binding]
	BindingValidator  *Validator[Binding]
	StatusGuard       *StatusGuard
}

// Register adds the handlers to a webhook server at their paths.
func Register(srv webhook.Server, scheme *runtime.Scheme, h Handlers) {
	srv.Register(MutateInstancePath, admission.WithDefaulter[Instance](scheme, h.InstanceDefaulter))
	srv.Register(ValidateInstancePath, admission.WithValidator[Instance](scheme, h.InstanceValidator))
	srv.Register(MutateBindingPath, admission.WithDefaulter[Binding](scheme, h.BindingDefaulter))
	srv.Register(ValidateBindingPath, admission.WithValidator[Binding](scheme, h.BindingValidator))
	srv.Register(ValidateStatusPath, &admission.Webhook{Handler: h.StatusGuard})
}
