package admission

import (
	"context"
	"errors"
	"fmt"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/catalog"
)

// instanceLookup finds what an instance names at its broker: the broker,
// whose catalog must be loaded, and the service and plan in it (on UPDATE
// also the persisted plan). On DELETE a missing broker or plan is not a
// field error but the reason the instance cannot be deprovisioned.
type instanceLookup struct {
	reader client.Reader
	cache  *catalog.Cache
}

func (l *instanceLookup) find(ctx context.Context, a *Attributes[Instance]) (*Target, field.ErrorList, error) {
	si := a.Object()
	spec := field.NewPath("spec")
	// On DELETE the user changed no field: a missing broker or plan is
	// not a field error there, but why the instance cannot be
	// deprovisioned.
	deleting := a.Operation == admissionv1.Delete
	entry, errs, err := resolveBroker(ctx, l.reader, l.cache, si.Spec.BrokerName, spec.Child("brokerName"))
	if entry == nil || err != nil {
		if deleting && err == nil {
			return nil, nil, conflict("instance %q cannot be deleted: no ServiceBroker named %q exists, so it cannot be deprovisioned at its broker; "+
				"the instance stays as it was (no deletion was started); recreate ServiceBroker %q with the URL of the broker that holds the instance, then delete again; or %s",
				si.Name, si.Spec.BrokerName, si.Spec.BrokerName, wayOut(v1alpha1.InstanceKind(si), si.Namespace, si.Name))
		}
		return &Target{}, errs, err
	}
	plan, errs := findPlan(ctx, l.cache, entry, serviceOf(a), si.Spec.PlanName, spec)
	if errs != nil {
		if deleting {
			return nil, nil, conflict("instance %q cannot be deleted: %s, and the deprovision must name the instance's service and plan; "+
				"the instance stays as it was (no deletion was started); %s", si.Name, errs[0].Detail, wayOut(v1alpha1.InstanceKind(si), si.Namespace, si.Name))
		}
		return &Target{}, errs, nil
	}
	t := &Target{Entry: entry, Plan: plan}
	if a.Operation == admissionv1.Update {
		if oldPlan, err := entry.Find(a.Old.Spec.ServiceName, a.Old.Spec.PlanName); err == nil {
			t.OldPlan = &oldPlan
		}
	}
	return t, nil, nil
}

// serviceOf returns the service an instance has. A changed serviceName is
// refused by the field policy (create-only); the other checks look at the
// service the instance has, so that the refusal names that error alone and
// still reports every other one.
func serviceOf(a *Attributes[Instance]) string {
	if a.Operation == admissionv1.Update && a.Old.Spec.ServiceName != a.New.Spec.ServiceName {
		return a.Old.Spec.ServiceName
	}
	return a.Object().Spec.ServiceName
}

// instanceCatalog checks an instance against the plan that instanceLookup
// found: a removed plan takes no new instances, a plan changes only where
// the catalog allows it, and parameters match the plan's schemas
// (create-only parameters included).
type instanceCatalog struct {
	// size is the parameters' size check: parameters it refuses are not
	// checked against the schemas.
	size *parametersSize[Instance]
}

func (c *instanceCatalog) Name() string { return "catalog" }

func (c *instanceCatalog) Check(_ context.Context, a *Attributes[Instance], t *Target) (field.ErrorList, admission.Warnings, error) {
	if !t.found() {
		return nil, nil, nil // the Resolver reported why
	}
	si := a.New
	entry, plan := t.Entry, t.Plan
	spec := field.NewPath("spec")
	params := spec.Child("parameters")

	switch a.Operation {
	case admissionv1.Create:
		if plan.Removed {
			return field.ErrorList{field.Invalid(spec.Child("planName"), si.Spec.PlanName, fmt.Sprintf(
				"plan %q was removed from broker %q's catalog: it takes no new instances (existing ones may still update and delete); choose another plan",
				plan.Plan.Name, entry.Broker))}, nil, nil
		}
		if plan.SchemaError != nil {
			return field.ErrorList{field.InternalError(params, plan.SchemaError)}, nil, nil
		}
		if t.Params == nil && len(si.Spec.ParametersFrom) > 0 {
			return nil, nil, nil // the Resolver reported why they could not be resolved
		}
		if _, refused := c.size.refuses(a, t); refused {
			return nil, nil, nil // the size check reports them
		}
		return redact(plan.Schemas.ValidateProvision(mergedParams(t.Params, si.Spec.Parameters), params), params, t.Params), nil, nil

	case admissionv1.Update:
		old := a.Old
		var errs field.ErrorList
		if old.Spec.PlanName != si.Spec.PlanName {
			updateable := plan.Service.PlanUpdateable
			if t.OldPlan != nil {
				updateable = t.OldPlan.Updateable()
			}
			switch {
			case plan.Removed:
				errs = append(errs, field.Invalid(spec.Child("planName"), si.Spec.PlanName, fmt.Sprintf(
					"plan %q was removed from broker %q's catalog: instances cannot move to it; the instance keeps plan %q",
					plan.Plan.Name, entry.Broker, old.Spec.PlanName)))
			case !updateable:
				errs = append(errs, field.Invalid(spec.Child("planName"), si.Spec.PlanName, fmt.Sprintf(
					"broker %q does not allow plan changes for service %q (plan_updateable is false); the instance keeps plan %q: to use plan %q, create a new instance",
					entry.Broker, serviceOf(a), old.Spec.PlanName, si.Spec.PlanName)))
			}
		}
		if plan.SchemaError != nil {
			return append(errs, field.InternalError(params, plan.SchemaError)), nil, nil
		}
		if t.Params == nil && len(si.Spec.ParametersFrom) > 0 {
			return errs, nil, nil // the Resolver reported why they could not be resolved
		}
		if _, refused := c.size.refuses(a, t); refused {
			return errs, nil, nil // the size check reports them
		}
		oldParams, newParams := mergedParams(t.OldParams, old.Spec.Parameters), mergedParams(t.Params, si.Spec.Parameters)
		paramErrs := redact(plan.Schemas.ValidateUpdate(oldParams, newParams, params), params, t.OldParams, t.Params)
		if len(paramErrs) == 0 {
			paramErrs = createOnlyFromSecrets(plan.Schemas, old, t.Params, spec.Child("parametersFrom"))
		}
		return append(errs, paramErrs...), nil, nil
	}
	return nil, nil, nil
}

// resolveBroker finds a ServiceBroker and waits, within ctx, for its
// catalog. A missing broker is a field error; a catalog not loaded in time
// is a 503 telling the user to retry.
//
// A loaded catalog answers at once: the cache holds an entry only while its
// ServiceBroker exists (the catalog reconciler forgets deleted ones). The
// ServiceBroker itself is read only without an entry, to tell a missing
// broker from one still loading; reading it on every request would copy
// its status, with the whole catalog summary, out of the informer cache,
// and make admission slower the larger the catalog.
func resolveBroker(ctx context.Context, reader client.Reader, cache *catalog.Cache, name string, path *field.Path) (*catalog.Entry, field.ErrorList, error) {
	if name == "" {
		return nil, field.ErrorList{field.Required(path, "name the ServiceBroker (kubectl get servicebrokers); it is defaulted only when exactly one exists")}, nil
	}
	if entry, ok := cache.Get(name); ok {
		return entry, nil, nil
	}
	var sb v1alpha1.ServiceBroker
	if err := reader.Get(ctx, client.ObjectKey{Name: name}, &sb); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, field.ErrorList{field.Invalid(path, name, "no ServiceBroker has this name (kubectl get servicebrokers lists them)")}, nil
		}
		return nil, nil, unavailable("could not read ServiceBroker %q: %v; nothing was changed: retry", name, err)
	}
	entry, err := cache.Wait(ctx, name)
	if err != nil {
		if errors.Is(err, catalog.ErrNotReady) {
			return nil, nil, unavailable("the catalog of broker %q is not loaded yet (%s); nothing was changed: retry in a moment", name, readyMessage(&sb))
		}
		return nil, nil, unavailable("broker %q: %v; nothing was changed: retry", name, err)
	}
	return entry, nil, nil
}

// findPlan looks a service and plan up, refreshing the catalog at most
// once (rate limited) when the cached one does not know them.
func findPlan(ctx context.Context, cache *catalog.Cache, entry *catalog.Entry, service, plan string, spec *field.Path) (catalog.Plan, field.ErrorList) {
	p, err := entry.Find(service, plan)
	if err != nil {
		if fresh, rerr := cache.Refresh(ctx, entry.Broker); rerr == nil {
			entry = fresh
			p, err = entry.Find(service, plan)
		}
	}
	if err == nil {
		return p, nil
	}
	if !entry.HasService(service) {
		return p, field.ErrorList{field.Invalid(spec.Child("serviceName"), service, fmt.Sprintf("broker %q: %v", entry.Broker, err))}
	}
	return p, field.ErrorList{field.Invalid(spec.Child("planName"), plan, fmt.Sprintf("broker %q: %v", entry.Broker, err))}
}

func readyMessage(sb *v1alpha1.ServiceBroker) string {
	for _, c := range sb.Status.Conditions {
		if c.Type == v1alpha1.ConditionReady && c.Message != "" {
			return "last attempt: " + strings.TrimSpace(c.Message)
		}
	}
	return "no catalog fetched yet"
}
