package admission

// The access rules of a ServiceBroker select namespaces by their labels:
// admission reads them from lockstep's cache, which watches the
// namespaces' metadata only (list, watch), and only once a broker has
// rules.
//
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=list;watch

import (
	"context"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lockstep-dev/lockstep/internal/access"
)

// planAccess refuses a provision (or adoption), a plan change, or a bind
// outside the access rules of the broker (its ServiceBroker's spec.access),
// before the broker is called: the namespace may use the plan only where a
// rule that selects it opens the plan. Parameter updates and deletes are
// never refused, so that instances on a plan that is no longer open keep
// working, as instances on a removed plan do.
type planAccess[T client.Object] struct {
	rules  *access.Store
	reader client.Reader
	// use returns the plan a request would use anew; ok is false when it
	// uses none.
	use func(a *Attributes[T], t *Target) (u planUse, ok bool)
}

// planUse is the plan a request would use, the field that names it, and
// what to say before the refusal.
type planUse struct {
	service, plan string
	path          *field.Path
	prefix        string
}

func (c *planAccess[T]) Name() string { return "plan-access" }

func (c *planAccess[T]) Check(ctx context.Context, a *Attributes[T], t *Target) (field.ErrorList, admission.Warnings, error) {
	if !t.found() {
		return nil, nil, nil // the Resolver reported why
	}
	rules := c.rules.Get(t.Entry.Broker)
	if rules.Open() {
		return nil, nil, nil
	}
	u, ok := c.use(a, t)
	if !ok {
		return nil, nil, nil
	}
	namespace := a.New.GetNamespace()
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	if err := c.reader.Get(ctx, client.ObjectKey{Name: namespace}, ns); err != nil {
		return nil, nil, unavailable("could not read the labels of namespace %q, which the access rules of broker %q select by: %v; nothing was changed: retry",
			namespace, t.Entry.Broker, err)
	}
	d := rules.Decide(namespace, ns.Labels, u.service, u.plan)
	if d.Allowed {
		return nil, nil, nil
	}
	return field.ErrorList{field.Forbidden(u.path, u.prefix+d.Why)}, nil, nil
}

// instancePlan is the plan an instance's request uses anew: the plan of a
// create, the new plan of a plan change.
func instancePlan(a *Attributes[Instance], t *Target) (planUse, bool) {
	if a.Operation == admissionv1.Create || a.Operation == admissionv1.Update && a.Old.Spec.PlanName != a.New.Spec.PlanName {
		return planUse{service: t.Plan.Service.Name, plan: t.Plan.Plan.Name, path: field.NewPath("spec", "planName")}, true
	}
	return planUse{}, false
}

// bindingPlan is the plan a bind uses: its instance's.
func bindingPlan(a *Attributes[Binding], t *Target) (planUse, bool) {
	if a.Operation != admissionv1.Create || t.Instance == nil {
		return planUse{}, false
	}
	return planUse{service: t.Plan.Service.Name, plan: t.Plan.Plan.Name, path: field.NewPath("spec", "instanceName"),
		prefix: fmt.Sprintf("instance %q cannot be bound: ", t.Instance.Name)}, true
}
