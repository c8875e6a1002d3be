package admission

import (
	"context"

	"github.com/google/uuid"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/journal"
	"github.com/lockstep-dev/lockstep/internal/validate"
)

// Binding is a ServiceBinding as the admission chain sees it.
type Binding = *v1alpha1.ServiceBinding

var bindingKind = v1alpha1.GroupVersion.WithKind("ServiceBinding").GroupKind()

// NewBindingDefaulter returns the mutating handler for ServiceBindings.
func NewBindingDefaulter() *Defaulter[Binding] {
	return &Defaulter[Binding]{
		New: func() Binding { return &v1alpha1.ServiceBinding{} },
		Defaults: func(_ context.Context, sb Binding) error {
			if sb.Spec.ExternalID == "" && !v1alpha1.Adopting(sb) {
				sb.Spec.ExternalID = uuid.NewString()
			}
			if sb.Spec.SecretName == "" {
				if sb.Name == "" {
					return apierrors.NewInvalid(bindingKind, sb.GenerateName, field.ErrorList{field.Required(
						field.NewPath("spec", "secretName"),
						"set it when the binding's name is generated (metadata.generateName); by default it is the binding's name")})
				}
				sb.Spec.SecretName = sb.Name
			}
			return nil
		},
		Keep: func(old, sb Binding) {
			if sb.Spec.ExternalID == "" {
				sb.Spec.ExternalID = old.Spec.ExternalID
			}
			if sb.Spec.SecretName == "" {
				sb.Spec.SecretName = old.Spec.SecretName
			}
		},
	}
}

// NewBindingValidator returns the validating chain for ServiceBindings:
// field policies, spec checks and registered hooks; then the Resolver
// (parameters from Secrets, the bound instance, its broker and plan) and
// the checks of the instance and the Secret against it; then the
// namespace's quotas; then, where it is on, the preflight; then the broker
// call.
// OSB bindings cannot be updated, so every spec field is create-only: a
// change is refused with the advice to delete and recreate the binding.
func NewBindingValidator(d Deps, hooks *validate.Hooks[Binding]) *Validator[Binding] {
	size := &parametersSize[Binding]{max: d.MaxParametersBytes, own: func(b Binding) *runtime.RawExtension { return b.Spec.Parameters }}
	return &Validator[Binding]{
		Kind:     bindingKind,
		Gate:     &reconcilePolicy[Binding]{kind: bindingKind, journal: d.Journal, reader: d.Reader},
		SameSpec: func(old, new Binding) bool { return journal.SameSpec(old.Spec, new.Spec) },
		Checks: []Check[Binding]{
			fieldPolicy[Binding](),
			CheckFunc[Binding]{CheckName: "spec", Fn: func(_ context.Context, a *Attributes[Binding]) (field.ErrorList, admission.Warnings, error) {
				return validate.ServiceBindingSpec(&a.New.Spec, field.NewPath("spec")), nil, nil
			}},
			hookCheck(hooks),
			&adoptAccess[Binding]{access: d.Access, kind: v1alpha1.KindServiceBinding},
			&externalIDFree[Binding]{ids: d.externalIDs(), kind: v1alpha1.KindServiceBinding},
		},
		Resolve: &targetResolver[Binding]{
			params: &parametersFrom[Binding]{secrets: d.Secrets, access: d.Access, maxBytes: d.MaxParametersBytes, of: func(b Binding) (*runtime.RawExtension, []v1alpha1.ParametersFromSource) {
				return b.Spec.Parameters, b.Spec.ParametersFrom
			}},
			lookup: &bindingLookup{reader: d.Reader, cache: d.Catalogs},
		},
		TargetChecks: []TargetCheck[Binding]{
			size,
			&bindingInstance{leases: d.Leases, size: size},
			&planAccess[Binding]{rules: d.AccessRules, reader: d.Reader, use: bindingPlan},
			&bindingSecret{reader: d.Secrets},
			&bindingTransforms{secrets: d.Secrets, access: d.Access},
		},
		Limits: []Limit[Binding]{
			&resourceQuotas[Binding]{quotas: d.Quotas, inFlight: d.quotaInFlight(), resource: v1alpha1.GroupVersion.WithResource("servicebindings").GroupResource(), kind: bindingKind},
		},
		Steps: []Step[Binding]{
			&preflight[Binding]{opts: d.Preflight, brokers: d.Reader, log: d.Broker.Log},
			&bindingBroker{carry: newCarrier(d), writer: d.Writer},
		},
		Self:   d.Preflight.Self,
		Budget: d.Budget,
	}
}
