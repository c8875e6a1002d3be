package admission

import (
	"context"
	"fmt"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/catalog"
	"github.com/lockstep-dev/lockstep/internal/journal"
	"github.com/lockstep-dev/lockstep/internal/metrics"
	"github.com/lockstep-dev/lockstep/internal/typed/object"
	"github.com/lockstep-dev/lockstep/internal/typed/render"
)

// bindingLookup finds what a binding names: its instance, in the
// binding's namespace, and the instance's broker and plan. On DELETE a
// missing instance or broker is not a field error but the reason the
// binding cannot be unbound.
type bindingLookup struct {
	reader client.Reader
	cache  *catalog.Cache
}

func (l *bindingLookup) find(ctx context.Context, a *Attributes[Binding]) (*Target, field.ErrorList, error) {
	b := a.Object()
	spec := field.NewPath("spec")
	kind := b.Spec.InstanceKindName()
	si, err := object.Instance(ctx, l.reader, b.Spec.InstanceKind, client.ObjectKey{Namespace: b.Namespace, Name: b.Spec.InstanceName})
	if err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, nil, unavailable("could not read %s %q: %v; nothing was changed: retry", kind, b.Spec.InstanceName, err)
		}
		if a.Operation == admissionv1.Delete {
			return nil, nil, conflict("the instance %q of binding %q no longer exists, so lockstep cannot unbind at the broker; the binding stays as it was; %s",
				b.Spec.InstanceName, b.Name, wayOut(v1alpha1.KindServiceBinding, b.Namespace, b.Name))
		}
		if b.Spec.InstanceKind != "" {
			if _, served, kerr := object.KindNamed(ctx, l.reader, render.Group, b.Spec.InstanceKind); kerr == nil && !served {
				return &Target{}, field.ErrorList{field.Invalid(spec.Child("instanceKind"), b.Spec.InstanceKind, fmt.Sprintf(
					"no typed kind of this name (kubectl api-resources --api-group %s lists them; leave instanceKind out to bind a ServiceInstance)", render.Group))}, nil
			}
		}
		resource := "serviceinstances"
		if b.Spec.InstanceKind != "" {
			resource = strings.ToLower(kind) // kubectl takes a kind's singular too
		}
		return &Target{}, field.ErrorList{field.Invalid(spec.Child("instanceName"), b.Spec.InstanceName,
			fmt.Sprintf("no %s of this name in namespace %q (kubectl get %s -n %s)", kind, b.Namespace, resource, b.Namespace))}, nil
	}
	entry, errs, err := resolveBroker(ctx, l.reader, l.cache, si.Spec.BrokerName, spec.Child("brokerName"))
	switch {
	case err != nil:
		return nil, nil, err
	case entry == nil && a.Operation == admissionv1.Delete:
		return nil, nil, conflict("binding %q cannot be deleted: its instance %q uses ServiceBroker %q, which no longer exists, so lockstep cannot unbind at the broker; "+
			"the binding and its Secret stay as they were (no deletion was started); recreate ServiceBroker %q with the URL of the broker that holds the binding, then delete again; or %s",
			b.Name, si.Name, si.Spec.BrokerName, si.Spec.BrokerName, wayOut(v1alpha1.KindServiceBinding, b.Namespace, b.Name))
	case entry == nil:
		return &Target{}, field.ErrorList{field.Invalid(spec.Child("instanceName"), b.Spec.InstanceName, fmt.Sprintf(
			"instance %q uses ServiceBroker %q, which does not exist (kubectl get servicebrokers): it cannot be bound (%s)", si.Name, si.Spec.BrokerName, errs.ToAggregate()))}, nil
	}
	plan, err := entry.Find(si.Spec.ServiceName, si.Spec.PlanName)
	if err != nil {
		msg := fmt.Sprintf("the plan of instance %q is unknown to broker %q: %v; nothing was changed", si.Name, entry.Broker, err)
		if a.Operation == admissionv1.Delete {
			msg += "; " + wayOut(v1alpha1.KindServiceBinding, b.Namespace, b.Name)
		}
		return nil, nil, conflict("%s", msg)
	}
	return &Target{Entry: entry, Plan: plan, Instance: si}, nil, nil
}

// bindingInstance checks that the instance bindingLookup found can take
// the bind: it is not being deleted and has no broker operation in flight;
// its plan is bindable; the parameters match the plan's bind schema.
type bindingInstance struct {
	leases *journal.Leases
	// size is the parameters' size check: parameters it refuses are not
	// checked against the schema.
	size *parametersSize[Binding]
}

func (c *bindingInstance) Name() string { return "instance" }

func (c *bindingInstance) Check(ctx context.Context, a *Attributes[Binding], t *Target) (field.ErrorList, admission.Warnings, error) {
	if !t.found() {
		return nil, nil, nil // the Resolver reported why
	}
	b, si, entry, plan := a.New, t.Instance, t.Entry, t.Plan
	spec := field.NewPath("spec")
	if si.DeletionTimestamp != nil {
		return nil, nil, conflict("instance %q is being deleted; it takes no new bindings", si.Name)
	}
	key := journal.KeyOf(v1alpha1.InstanceKind(si), si)
	holder, err := c.leases.AwaitFree(ctx, key)
	if err != nil {
		return nil, nil, unavailable("could not read the lock of instance %q: %v; nothing was changed: retry", si.Name, err)
	}
	if holder != nil {
		metrics.LockContention(string(v1alpha1.InstanceKind(si)))
		if !holder.About(key) {
			// A create elsewhere that names the instance's external id
			// holds its lock for a moment, until it is refused.
			return nil, nil, conflict("instance %q has a broker operation in flight (another object's, naming its external id); bind in a moment", si.Name)
		}
		return nil, nil, conflict("instance %q has a broker operation in flight (%s); bind when it has finished", si.Name, holder)
	}
	if !plan.Bindable() {
		return field.ErrorList{field.Invalid(spec.Child("instanceName"), b.Spec.InstanceName, fmt.Sprintf(
			"instance %q cannot be bound: broker %q says plan %q of service %q is not bindable", si.Name, entry.Broker, plan.Plan.Name, plan.Service.Name))}, nil, nil
	}
	if plan.SchemaError != nil {
		return field.ErrorList{field.InternalError(spec.Child("parameters"), plan.SchemaError)}, nil, nil
	}
	if t.Params == nil && len(b.Spec.ParametersFrom) > 0 {
		return nil, nil, nil // the Resolver reported why they could not be resolved
	}
	if _, refused := c.size.refuses(a, t); refused {
		return nil, nil, nil // the size check reports them
	}
	params := spec.Child("parameters")
	return redact(plan.Schemas.ValidateBind(mergedParams(t.Params, b.Spec.Parameters), params), params, t.Params), nil, nil
}
