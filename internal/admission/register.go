package admission

// Admission reads instances and bindings from the manager's cache (the
// bound instance, the live bindings of an instance or ServiceBroker being
// deleted); the marketplace guard reads a ServiceBroker directly (get) to
// let the garbage collector delete the marketplace of a broker that is
// gone. A binding's credentials are written during admission into the
// Secret spec.secretName (get: is the name free, does lockstep own that
// Secret; create; update to rewrite a Secret lockstep wrote for the same
// binding).
//
// +kubebuilder:rbac:groups=lockstep.dev,resources=serviceinstances;servicebindings,verbs=list;watch
// +kubebuilder:rbac:groups=lockstep.dev,resources=servicebrokers,verbs=get
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;create;update
//
// The webhooks of typed kinds read each kind's CustomResourceDefinition
// from the cache (TypedKinds), and ask the API server which object of a
// typed kind holds an external id (list); the journal reads the object of
// a typed kind a record names (get).
//
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;list;watch
// +kubebuilder:rbac:groups=services.lockstep.dev,resources=*,verbs=get;list

import (
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/tracing"
)

// The webhook configurations that `make generate` writes to
// deploy/webhook/manifests.yaml, from the +kubebuilder:webhook markers
// beside each webhook's constructor below. What every webhook shares:
//
//   - failurePolicy Fail: a change that lockstep could not judge, or could
//     not carry out at the broker, is never persisted.
//   - namespaceSelector: objects in kube-system and in lockstep's own
//     namespace (v1alpha1.DefaultNamespace, written by make generate where
//     the markers say LOCKSTEP_NAMESPACE) never go through
//     lockstep, so that a broken or missing lockstep can never block the
//     cluster's system namespace or its own repair. The API server sets the
//     label kubernetes.io/metadata.name on every namespace. Cluster-scoped
//     objects (ServiceBrokers, the marketplace, the status of
//     ServiceBrokers) are always sent.
//   - matchConditions (CEL, evaluated by the API server): a request whose
//     answer is known in advance is never sent. docs/operations.md lists
//     what each webhook skips, and test/e2e shows each skipped class
//     behaving as before.
//
// +kubebuilder:webhookconfiguration:mutating=true,name=lockstep-mutating
// +kubebuilder:webhookconfiguration:mutating=false,name=lockstep-validating

// The paths lockstep serves its webhooks on; the markers name the same.
const (
	MutateInstancePath   = "/mutate-lockstep-dev-v1alpha1-serviceinstance"
	ValidateInstancePath = "/validate-lockstep-dev-v1alpha1-serviceinstance"
	MutateBindingPath    = "/mutate-lockstep-dev-v1alpha1-servicebinding"
	ValidateBindingPath  = "/validate-lockstep-dev-v1alpha1-servicebinding"
	ValidateStatusPath   = "/validate-lockstep-dev-v1alpha1-status"
	ValidateBrokerPath   = "/validate-lockstep-dev-v1alpha1-servicebroker"
	// ValidateMarketplacePath serves ServiceOfferings and ServicePlans.
	ValidateMarketplacePath = "/validate-lockstep-dev-v1alpha1-marketplace"
	// MutateTypedPath and ValidateTypedPath serve the objects of every
	// typed kind (group services.lockstep.dev).
	MutateTypedPath   = "/mutate-services-lockstep-dev-v1alpha1-typed"
	ValidateTypedPath = "/validate-services-lockstep-dev-v1alpha1-typed"
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
	// TypedKinds, when set, serves the objects of typed kinds with the
	// instance defaulter and validator.
	TypedKinds *TypedKinds
}

// Register adds the handlers to a webhook server at their paths, each as a
// controller-runtime admission.Webhook: the defaulters through
// admission.WithDefaulter, the validators and guards as admission.Handlers
// that read the request's raw objects and decode only what they need.
//
// With tracing on, each request is a lockstep.admission span in the trace
// of the traceparent the API server sends (internal/tracing).
func Register(srv webhook.Server, scheme *runtime.Scheme, h Handlers) {
	register := func(path string, wh http.Handler) { srv.Register(path, tracing.Handler(path, wh)) }
	register(MutateInstancePath, InstancePrecheckWebhook(InstanceDefaulterWebhook(scheme, h.InstanceDefaulter), h.InstanceDefaulter, h.InstanceValidator))
	register(ValidateInstancePath, InstanceValidatorWebhook(h.InstanceValidator))
	register(MutateBindingPath, BindingDefaulterWebhook(scheme, h.BindingDefaulter))
	register(ValidateBindingPath, BindingValidatorWebhook(h.BindingValidator))
	register(ValidateStatusPath, StatusGuardWebhook(h.StatusGuard))
	if h.BrokerGuard != nil {
		register(ValidateBrokerPath, BrokerGuardWebhook(h.BrokerGuard))
	}
	if h.MarketplaceGuard != nil {
		register(ValidateMarketplacePath, MarketplaceGuardWebhook(h.MarketplaceGuard))
	}
	if h.TypedKinds != nil {
		register(MutateTypedPath, TypedDefaulterWebhook(h.TypedKinds, h.InstanceDefaulter, h.InstanceValidator))
		register(ValidateTypedPath, TypedValidatorWebhook(h.TypedKinds, h.InstanceValidator))
	}
}

// The mutating webhooks default on CREATE, and on UPDATE only restore the
// finalizer, the defaulted label and the defaulted fields a request left
// empty; they change nothing on an object being deleted. Each is two
// entries on one path: every CREATE, and only the UPDATEs of objects
// without v1alpha1.DefaultedLabel (an objectSelector, not a
// matchCondition), not being deleted. An objectSelector is read from the
// objects' labels as they are; a matchCondition makes the API server copy
// the object and the old object for every update it matches, spec
// changes and metadata-only ones alike. An update that drops the label is
// sent, and gets the label back with the defaults; one that keeps it and
// leaves out a defaulted field is refused by the CRD's create-only rules;
// the reconcilers put back a finalizer taken off a labelled object
// (brokered.RestoreFinalizer). timeoutSeconds 5: defaulting is in-memory
// work (a UUID, a finalizer, a cached broker list); if it takes longer
// something is wrong, and failing fast keeps kubectl responsive.
// sideEffects None: they never call the broker.
//
// They also precheck (precheck.go): the API server checks an object
// against its CRD between the mutating and the validating webhooks and
// stops at its own errors, so the mutating webhook runs the validating
// chain's static checks first and refuses with every error at once. Every
// CREATE is prechecked in the handler (typed objects always, instances
// whose spec.parameters is not a JSON object); a third entry of each sends
// the UPDATEs of labelled objects that need it: those that change a typed
// object's spec, and those that make an instance's spec.parameters
// something else than an object (its CRD's type error; every other
// instance update the API server checks as ever, without a call).

// +kubebuilder:webhook:path=/mutate-lockstep-dev-v1alpha1-serviceinstance,mutating=true,failurePolicy=fail,sideEffects=None,timeoutSeconds=5,reinvocationPolicy=Never,groups=lockstep.dev,resources=serviceinstances,verbs=create,versions=v1alpha1,name=serviceinstances.mutate.lockstep.dev,admissionReviewVersions=v1,serviceName=lockstep-webhook,serviceNamespace=LOCKSTEP_NAMESPACE,patch=`{"namespaceSelector":{"matchExpressions":[{"key":"kubernetes.io/metadata.name","operator":"NotIn","values":["kube-system","LOCKSTEP_NAMESPACE"]}]}}`
// +kubebuilder:webhook:path=/mutate-lockstep-dev-v1alpha1-serviceinstance,mutating=true,failurePolicy=fail,sideEffects=None,timeoutSeconds=5,reinvocationPolicy=Never,groups=lockstep.dev,resources=serviceinstances,verbs=update,versions=v1alpha1,name=serviceinstances-update.mutate.lockstep.dev,admissionReviewVersions=v1,serviceName=lockstep-webhook,serviceNamespace=LOCKSTEP_NAMESPACE,patch=`{"namespaceSelector":{"matchExpressions":[{"key":"kubernetes.io/metadata.name","operator":"NotIn","values":["kube-system","LOCKSTEP_NAMESPACE"]}]},"objectSelector":{"matchExpressions":[{"key":"lockstep.dev/defaulted","operator":"NotIn","values":["true"]}]},"matchConditions":[{"name":"not-being-deleted","expression":"!has(object.metadata.deletionTimestamp)"}]}`
// +kubebuilder:webhook:path=/mutate-lockstep-dev-v1alpha1-serviceinstance,mutating=true,failurePolicy=fail,sideEffects=None,timeoutSeconds=5,reinvocationPolicy=Never,groups=lockstep.dev,resources=serviceinstances,verbs=update,versions=v1alpha1,name=serviceinstances-check.mutate.lockstep.dev,admissionReviewVersions=v1,serviceName=lockstep-webhook,serviceNamespace=LOCKSTEP_NAMESPACE,patch=`{"namespaceSelector":{"matchExpressions":[{"key":"kubernetes.io/metadata.name","operator":"NotIn","values":["kube-system","LOCKSTEP_NAMESPACE"]}]},"objectSelector":{"matchLabels":{"lockstep.dev/defaulted":"true"}},"matchConditions":[{"name":"parameters-not-an-object","expression":"!has(oldObject.metadata.deletionTimestamp) && !has(object.metadata.deletionTimestamp) && has(object.spec) && has(object.spec.parameters) && type(object.spec.parameters) != map && type(object.spec.parameters) != null_type"}]}`

// InstancePrecheckWebhook is wh, the ServiceInstance defaulter's webhook,
// with the precheck of an instance whose spec.parameters is not a JSON
// object ahead of it (precheck.go): every error at once, instead of the
// API server's type error alone.
func InstancePrecheckWebhook(wh *admission.Webhook, d *Defaulter[Instance], v *Validator[Instance]) *admission.Webhook {
	wh.Handler = &instancePrecheck{Handler: wh.Handler, defaulter: d, validator: v}
	return wh
}

// InstanceDefaulterWebhook serves the ServiceInstance defaulter.
func InstanceDefaulterWebhook(scheme *runtime.Scheme, d *Defaulter[Instance]) *admission.Webhook {
	return defaulterWebhook(scheme, d, instanceKind)
}

// +kubebuilder:webhook:path=/mutate-lockstep-dev-v1alpha1-servicebinding,mutating=true,failurePolicy=fail,sideEffects=None,timeoutSeconds=5,reinvocationPolicy=Never,groups=lockstep.dev,resources=servicebindings,verbs=create,versions=v1alpha1,name=servicebindings.mutate.lockstep.dev,admissionReviewVersions=v1,serviceName=lockstep-webhook,serviceNamespace=LOCKSTEP_NAMESPACE,patch=`{"namespaceSelector":{"matchExpressions":[{"key":"kubernetes.io/metadata.name","operator":"NotIn","values":["kube-system","LOCKSTEP_NAMESPACE"]}]}}`
// +kubebuilder:webhook:path=/mutate-lockstep-dev-v1alpha1-servicebinding,mutating=true,failurePolicy=fail,sideEffects=None,timeoutSeconds=5,reinvocationPolicy=Never,groups=lockstep.dev,resources=servicebindings,verbs=update,versions=v1alpha1,name=servicebindings-update.mutate.lockstep.dev,admissionReviewVersions=v1,serviceName=lockstep-webhook,serviceNamespace=LOCKSTEP_NAMESPACE,patch=`{"namespaceSelector":{"matchExpressions":[{"key":"kubernetes.io/metadata.name","operator":"NotIn","values":["kube-system","LOCKSTEP_NAMESPACE"]}]},"objectSelector":{"matchExpressions":[{"key":"lockstep.dev/defaulted","operator":"NotIn","values":["true"]}]},"matchConditions":[{"name":"not-being-deleted","expression":"!has(object.metadata.deletionTimestamp)"}]}`

// BindingDefaulterWebhook serves the ServiceBinding defaulter.
func BindingDefaulterWebhook(scheme *runtime.Scheme, d *Defaulter[Binding]) *admission.Webhook {
	return defaulterWebhook(scheme, d, bindingKind)
}

// The validating webhooks of instances and bindings carry the change out at
// the broker, synchronously, and may poll an asynchronous operation:
// timeoutSeconds 30, the maximum the API server allows; lockstep answers
// within its own admission budget (LOCKSTEP_ADMISSION_BUDGET, default 25s)
// so that it always replies with the broker's answer, or with "still in
// progress", before the API server gives up on it. sideEffects
// NoneOnDryRun: a dry run never calls the broker. Their matchCondition
// sends every CREATE and DELETE, and an UPDATE only when it changes the
// spec of an object that is not being deleted: every other UPDATE
// (labels, annotations, the reconcile policy included, finalizers, owner
// references) lockstep allows at once, without a check or a side effect,
// so that nothing ever blocks finalizer removal.

// +kubebuilder:webhook:path=/validate-lockstep-dev-v1alpha1-serviceinstance,mutating=false,failurePolicy=fail,sideEffects=NoneOnDryRun,timeoutSeconds=30,groups=lockstep.dev,resources=serviceinstances,verbs=create;update;delete,versions=v1alpha1,name=serviceinstances.validate.lockstep.dev,admissionReviewVersions=v1,serviceName=lockstep-webhook,serviceNamespace=LOCKSTEP_NAMESPACE,patch=`{"namespaceSelector":{"matchExpressions":[{"key":"kubernetes.io/metadata.name","operator":"NotIn","values":["kube-system","LOCKSTEP_NAMESPACE"]}]},"matchConditions":[{"name":"not-metadata-only","expression":"request.operation != 'UPDATE' || (!has(oldObject.metadata.deletionTimestamp) && (!has(object.spec) || !has(oldObject.spec) || object.spec != oldObject.spec))"}]}`

// The webhooks of typed kinds are the instance webhooks for every resource
// of group services.lockstep.dev, with the same settings and selectors:
// one rule covers every kind lockstep renders, present and future, so
// that no webhook configuration changes when an offering is activated.
// The status guard covers their status too.

// +kubebuilder:webhook:path=/mutate-services-lockstep-dev-v1alpha1-typed,mutating=true,failurePolicy=fail,sideEffects=None,timeoutSeconds=5,reinvocationPolicy=Never,groups=services.lockstep.dev,resources=*,verbs=create,versions=v1alpha1,name=typed.mutate.lockstep.dev,admissionReviewVersions=v1,serviceName=lockstep-webhook,serviceNamespace=LOCKSTEP_NAMESPACE,patch=`{"namespaceSelector":{"matchExpressions":[{"key":"kubernetes.io/metadata.name","operator":"NotIn","values":["kube-system","LOCKSTEP_NAMESPACE"]}]}}`
// +kubebuilder:webhook:path=/mutate-services-lockstep-dev-v1alpha1-typed,mutating=true,failurePolicy=fail,sideEffects=None,timeoutSeconds=5,reinvocationPolicy=Never,groups=services.lockstep.dev,resources=*,verbs=update,versions=v1alpha1,name=typed-update.mutate.lockstep.dev,admissionReviewVersions=v1,serviceName=lockstep-webhook,serviceNamespace=LOCKSTEP_NAMESPACE,patch=`{"namespaceSelector":{"matchExpressions":[{"key":"kubernetes.io/metadata.name","operator":"NotIn","values":["kube-system","LOCKSTEP_NAMESPACE"]}]},"objectSelector":{"matchExpressions":[{"key":"lockstep.dev/defaulted","operator":"NotIn","values":["true"]}]},"matchConditions":[{"name":"not-being-deleted","expression":"!has(object.metadata.deletionTimestamp)"}]}`
// +kubebuilder:webhook:path=/mutate-services-lockstep-dev-v1alpha1-typed,mutating=true,failurePolicy=fail,sideEffects=None,timeoutSeconds=5,reinvocationPolicy=Never,groups=services.lockstep.dev,resources=*,verbs=update,versions=v1alpha1,name=typed-check.mutate.lockstep.dev,admissionReviewVersions=v1,serviceName=lockstep-webhook,serviceNamespace=LOCKSTEP_NAMESPACE,patch=`{"namespaceSelector":{"matchExpressions":[{"key":"kubernetes.io/metadata.name","operator":"NotIn","values":["kube-system","LOCKSTEP_NAMESPACE"]}]},"objectSelector":{"matchLabels":{"lockstep.dev/defaulted":"true"}},"matchConditions":[{"name":"spec-changed","expression":"!has(oldObject.metadata.deletionTimestamp) && !has(object.metadata.deletionTimestamp) && (!has(object.spec) || !has(oldObject.spec) || object.spec != oldObject.spec)"}]}`
// +kubebuilder:webhook:path=/validate-services-lockstep-dev-v1alpha1-typed,mutating=false,failurePolicy=fail,sideEffects=NoneOnDryRun,timeoutSeconds=30,groups=services.lockstep.dev,resources=*,verbs=create;update;delete,versions=v1alpha1,name=typed.validate.lockstep.dev,admissionReviewVersions=v1,serviceName=lockstep-webhook,serviceNamespace=LOCKSTEP_NAMESPACE,patch=`{"namespaceSelector":{"matchExpressions":[{"key":"kubernetes.io/metadata.name","operator":"NotIn","values":["kube-system","LOCKSTEP_NAMESPACE"]}]},"matchConditions":[{"name":"not-metadata-only","expression":"request.operation != 'UPDATE' || (!has(oldObject.metadata.deletionTimestamp) && (!has(object.spec) || !has(oldObject.spec) || object.spec != oldObject.spec))"}]}`
// +kubebuilder:webhook:path=/validate-lockstep-dev-v1alpha1-status,mutating=false,failurePolicy=fail,sideEffects=None,timeoutSeconds=5,groups=services.lockstep.dev,resources=*/status,verbs=update,versions=v1alpha1,name=typedstatus.validate.lockstep.dev,admissionReviewVersions=v1,serviceName=lockstep-webhook,serviceNamespace=LOCKSTEP_NAMESPACE,patch=`{"namespaceSelector":{"matchExpressions":[{"key":"kubernetes.io/metadata.name","operator":"NotIn","values":["kube-system","LOCKSTEP_NAMESPACE"]}]},"matchConditions":[{"name":"not-lockstep","expression":"request.userInfo.username != \"system:serviceaccount:LOCKSTEP_NAMESPACE:lockstep\""}]}`

// InstanceValidatorWebhook serves the ServiceInstance validator.
func InstanceValidatorWebhook(v *Validator[Instance]) *admission.Webhook {
	return withLogger(&admission.Webhook{Handler: &validatingHandler[Instance]{
		validator: v, new: func() Instance { return &v1alpha1.ServiceInstance{} },
		parts: func(si Instance) (*metav1.ObjectMeta, any) { return &si.ObjectMeta, &si.Spec },
	}})
}

// +kubebuilder:webhook:path=/validate-lockstep-dev-v1alpha1-servicebinding,mutating=false,failurePolicy=fail,sideEffects=NoneOnDryRun,timeoutSeconds=30,groups=lockstep.dev,resources=servicebindings,verbs=create;update;delete,versions=v1alpha1,name=servicebindings.validate.lockstep.dev,admissionReviewVersions=v1,serviceName=lockstep-webhook,serviceNamespace=LOCKSTEP_NAMESPACE,patch=`{"namespaceSelector":{"matchExpressions":[{"key":"kubernetes.io/metadata.name","operator":"NotIn","values":["kube-system","LOCKSTEP_NAMESPACE"]}]},"matchConditions":[{"name":"not-metadata-only","expression":"request.operation != 'UPDATE' || (!has(oldObject.metadata.deletionTimestamp) && (!has(object.spec) || !has(oldObject.spec) || object.spec != oldObject.spec))"}]}`

// BindingValidatorWebhook serves the ServiceBinding validator.
func BindingValidatorWebhook(v *Validator[Binding]) *admission.Webhook {
	return withLogger(&admission.Webhook{Handler: &validatingHandler[Binding]{
		validator: v, new: func() Binding { return &v1alpha1.ServiceBinding{} },
		parts: func(b Binding) (*metav1.ObjectMeta, any) { return &b.ObjectMeta, &b.Spec },
	}})
}

// +kubebuilder:webhook:path=/validate-lockstep-dev-v1alpha1-status,mutating=false,failurePolicy=fail,sideEffects=None,timeoutSeconds=5,groups=lockstep.dev,resources=serviceinstances/status;servicebindings/status;servicebrokers/status;brokeroperations,verbs=create;update,versions=v1alpha1,name=status.validate.lockstep.dev,admissionReviewVersions=v1,serviceName=lockstep-webhook,serviceNamespace=LOCKSTEP_NAMESPACE,patch=`{"namespaceSelector":{"matchExpressions":[{"key":"kubernetes.io/metadata.name","operator":"NotIn","values":["kube-system","LOCKSTEP_NAMESPACE"]}]},"matchConditions":[{"name":"not-lockstep","expression":"request.userInfo.username != \"system:serviceaccount:LOCKSTEP_NAMESPACE:lockstep\""}]}`

// StatusGuardWebhook serves the status guard: status says what the broker
// confirmed, so only lockstep writes it, and only lockstep writes the
// operation records, which carry their status with them. (A create of a
// status subresource is never sent: the rule's create is for the records.) Its matchCondition skips
// lockstep's own status writes, which the guard lets through anyway: a
// round trip saved per write. Installed under another namespace or service
// account, lockstep is still asked about its own writes, and allows them,
// until the name in the condition is changed too.
func StatusGuardWebhook(g *StatusGuard) *admission.Webhook {
	return withLogger(&admission.Webhook{Handler: g})
}

// +kubebuilder:webhook:path=/validate-lockstep-dev-v1alpha1-servicebroker,mutating=false,failurePolicy=fail,sideEffects=None,timeoutSeconds=5,groups=lockstep.dev,resources=servicebrokers,verbs=create;update;delete,versions=v1alpha1,name=servicebrokers.validate.lockstep.dev,admissionReviewVersions=v1,serviceName=lockstep-webhook,serviceNamespace=LOCKSTEP_NAMESPACE,patch=`{"namespaceSelector":{"matchExpressions":[{"key":"kubernetes.io/metadata.name","operator":"NotIn","values":["kube-system","LOCKSTEP_NAMESPACE"]}]},"matchConditions":[{"name":"typed-kinds-changed-or-credentials-named","expression":"request.operation == 'DELETE' || (request.operation == 'CREATE' && (has(object.spec.typedKinds) || has(object.spec.authSecretRef))) || (request.operation == 'UPDATE' && !has(object.metadata.deletionTimestamp) && (((has(oldObject.spec.typedKinds) || has(object.spec.typedKinds)) && (!has(object.spec.typedKinds) || !has(oldObject.spec.typedKinds) || object.spec.typedKinds != oldObject.spec.typedKinds)) || (has(object.spec.authSecretRef) && (!has(oldObject.spec.authSecretRef) || object.spec.authSecretRef != oldObject.spec.authSecretRef || object.spec.url != oldObject.spec.url))))"}]}`

// BrokerGuardWebhook serves the ServiceBroker guard: a ServiceBroker is not
// deleted while lockstep manages instances or bindings at it (they could
// never be deprovisioned or unbound then), neither it nor its
// spec.typedKinds takes a typed kind away while objects of the kind
// remain, spec.typedKinds gives no kind a name another resource or typed
// kind has, and its spec.authSecretRef names a Secret lockstep may use for
// its writer. DELETE is sent; CREATE with spec.typedKinds or
// spec.authSecretRef; UPDATE only when spec.typedKinds changes, or when
// spec.authSecretRef is set and it or spec.url changes.
func BrokerGuardWebhook(g *BrokerGuard) *admission.Webhook {
	return withLogger(&admission.Webhook{Handler: g})
}

// +kubebuilder:webhook:path=/validate-lockstep-dev-v1alpha1-marketplace,mutating=false,failurePolicy=fail,sideEffects=None,timeoutSeconds=5,groups=lockstep.dev,resources=serviceofferings;serviceofferings/status;serviceplans;serviceplans/status,verbs=create;update;delete,versions=v1alpha1,name=marketplace.validate.lockstep.dev,admissionReviewVersions=v1,serviceName=lockstep-webhook,serviceNamespace=LOCKSTEP_NAMESPACE,patch=`{"namespaceSelector":{"matchExpressions":[{"key":"kubernetes.io/metadata.name","operator":"NotIn","values":["kube-system","LOCKSTEP_NAMESPACE"]}]},"matchConditions":[{"name":"not-lockstep","expression":"request.userInfo.username != \"system:serviceaccount:LOCKSTEP_NAMESPACE:lockstep\""}]}`

// MarketplaceGuardWebhook serves the marketplace guard: ServiceOfferings
// and ServicePlans show what the brokers' catalogs say, and only lockstep's
// catalog sync writes them, whoever else asks (cluster administrators
// too). Every write is sent, its status too, except lockstep's own, which
// the guard lets through anyway (the matchCondition, as the status
// guard's); the guard also lets anyone's write through to an object whose
// ServiceBroker is gone or being deleted (the garbage collector).
func MarketplaceGuardWebhook(g *MarketplaceGuard) *admission.Webhook {
	return withLogger(&admission.Webhook{Handler: g})
}

// defaulterWebhook serves a Defaulter with admission.WithDefaulter, which
// decodes the request's object with the scheme; the defaulter decodes the
// persisted object of an UPDATE with the same decoder. A field of the
// wrong type is refused with its field path (fieldTypes).
func defaulterWebhook[T client.Object](scheme *runtime.Scheme, d *Defaulter[T], kind schema.GroupKind) *admission.Webhook {
	d.decoder = admission.NewDecoder(scheme)
	wh := admission.WithDefaulter[T](scheme, d)
	wh.Handler = &fieldTypes{Handler: wh.Handler, kind: kind, new: func() any { return d.New() }}
	return withLogger(wh)
}

// withLogger gives a webhook lockstep's cheap per-request logger.
func withLogger(wh *admission.Webhook) *admission.Webhook {
	wh.LogConstructor = requestLogger
	return wh
}
