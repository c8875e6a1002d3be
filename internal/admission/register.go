package admission

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// The paths lockstep serves its webhooks on; deploy/webhook uses the same.
const (
	MutateInstancePath   = "/mutate-lockstep-dev-v1alpha1-serviceinstance"
	ValidateInstancePath = "/validate-lockstep-dev-v1alpha1-serviceinstance"
	MutateBindingPath    = "/mutate-lockstep-dev-v1alpha1-servicebinding"
	ValidateBindingPath  = "/validate-lockstep-dev-v1alpha1-servicebinding"
	ValidateStatusPath   = "/validate-lockstep-dev-v1alpha1-status"
	ValidateBrokerPath   = "/validate-lockstep-dev-v1alpha1-servicebroker"
	// ValidateMarketplacePath serves ServiceOfferings and ServicePlans.
	ValidateMarketplacePath = "/validate-lockstep-dev-v1alpha1-marketplace"
)

// Handlers are the handlers lockstep serves.
type Handlers struct {
	InstanceDefaulter *Defaulter[Instance]
	InstanceValidator *Validator[Instance]
	BindingDefaulter  *Defaulter[Binding]
	BindingValidator  *Validator[Binding]
	StatusGuard       *StatusGuard
	BrokerGuard       *BrokerGuard
	MarketplaceGuard  *MarketplaceGuard
}

// webhookLog is the logger controller-runtime gives its webhooks.
var webhookLog = logf.Log.WithName("admission")

// Register adds the handlers to a webhook server at their paths. The
// validators are served by reviewServer, which reads an AdmissionReview in
// one pass; the defaulters and the status guard by controller-runtime's
// admission.Webhook.
func Register(srv webhook.Server, scheme *runtime.Scheme, h Handlers) {
	srv.Register(MutateInstancePath, withLogger(admission.WithDefaulter[Instance](scheme, h.InstanceDefaulter)))
	srv.Register(ValidateInstancePath, &reviewServer[Instance]{log: webhookLog, handler: &validatingHandler[Instance]{
		validator: h.InstanceValidator, new: func() Instance { return &v1alpha1.ServiceInstance{} },
		parts: func(si Instance) (*metav1.ObjectMeta, any) { return &si.ObjectMeta, &si.Spec },
	}})
	srv.Register(MutateBindingPath, withLogger(admission.WithDefaulter[Binding](scheme, h.BindingDefaulter)))
	srv.Register(ValidateBindingPath, &reviewServer[Binding]{log: webhookLog, handler: &validatingHandler[Binding]{
		validator: h.BindingValidator, new: func() Binding { return &v1alpha1.ServiceBinding{} },
		parts: func(b Binding) (*metav1.ObjectMeta, any) { return &b.ObjectMeta, &b.Spec },
	}})
	srv.Register(ValidateStatusPath, withLogger(&admission.Webhook{Handler: h.StatusGuard}))
	if h.BrokerGuard != nil {
		srv.Register(ValidateBrokerPath, withLogger(&admission.Webhook{Handler: h.BrokerGuard}))
	}
	if h.MarketplaceGuard != nil {
		srv.Register(ValidateMarketplacePath, withLogger(&admission.Webhook{Handler: h.MarketplaceGuard}))
	}
}

// withLogger gives a webhook lockstep's cheap per-request logger.
func withLogger(wh *admission.Webhook) *admission.Webhook {
	wh.LogConstructor = requestLogger
	return wh
}
