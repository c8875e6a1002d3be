package plugin

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// brokered is a ServiceInstance or a ServiceBinding, read as what the
// commands need of either.
type brokered struct {
	obj        client.Object
	kind       v1alpha1.TargetKind
	conditions []metav1.Condition
	last       *v1alpha1.LastOperation
	// broker is the instance's ServiceBroker ("" for a binding until its
	// instance is read).
	broker string
}

// resource is how kubectl names the object: serviceinstance/NAME.
func (b brokered) resource() string {
	return strings.ToLower(string(b.kind)) + "/" + b.obj.GetName()
}

// kinds are the names a user may give a kind in KIND/NAME, as kubectl
// knows them (kinds, plurals, short names) and shorter.
var kinds = map[string]v1alpha1.TargetKind{
	"serviceinstance": v1alpha1.KindServiceInstance, "serviceinstances": v1alpha1.KindServiceInstance,
	"si": v1alpha1.KindServiceInstance, "instance": v1alpha1.KindServiceInstance,
	"servicebinding": v1alpha1.KindServiceBinding, "servicebindings": v1alpha1.KindServiceBinding,
	"sbd": v1alpha1.KindServiceBinding, "binding": v1alpha1.KindServiceBinding,
}

// newObject returns an empty object of kind.
func newObject(kind v1alpha1.TargetKind) client.Object {
	if kind == v1alpha1.KindServiceBinding {
		return &v1alpha1.ServiceBinding{}
	}
	return &v1alpha1.ServiceInstance{}
}

// get reads an instance or binding.
func get(ctx context.Context, c client.Client, kind v1alpha1.TargetKind, ns, name string) (brokered, error) {
	obj := newObject(kind)
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
		return brokered{}, err
	}
	return view(obj), nil
}

// view reads obj (a ServiceInstance or ServiceBinding) as a brokered.
func view(obj client.Object) brokered {
	switch o := obj.(type) {
	case *v1alpha1.ServiceInstance:
		return brokered{obj: o, kind: v1alpha1.KindServiceInstance, conditions: o.Status.Conditions, last: o.Status.LastOperation, broker: o.Spec.BrokerName}
	case *v1alpha1.ServiceBinding:
		return brokered{obj: o, kind: v1alpha1.KindServiceBinding, conditions: o.Status.Conditions, last: o.Status.LastOperation}
	}
	panic(fmt.Sprintf("plugin: %T is not an instance or binding", obj))
}

// resolve finds the object a user named: KIND/NAME, or a bare NAME when
// exactly one instance or binding has it.
func resolve(ctx context.Context, c client.Client, ns, arg string) (brokered, error) {
	if k, name, ok := strings.Cut(arg, "/"); ok {
		kind, known := kinds[strings.ToLower(k)]
		if !known || name == "" {
			return brokered{}, fmt.Errorf("%q: name a serviceinstance/NAME (si/NAME) or servicebinding/NAME (sbd/NAME)", arg)
		}
		return get(ctx, c, kind, ns, name)
	}
	var found []brokered
	for _, kind := range []v1alpha1.TargetKind{v1alpha1.KindServiceInstance, v1alpha1.KindServiceBinding} {
		b, err := get(ctx, c, kind, ns, arg)
		switch {
		case err == nil:
			found = append(found, b)
		case !apierrors.IsNotFound(err):
			return brokered{}, err
		}
	}
	switch len(found) {
	case 0:
		return brokered{}, fmt.Errorf("no serviceinstance or servicebinding %q in namespace %s", arg, ns)
	case 1:
		return found[0], nil
	default:
		return brokered{}, fmt.Errorf("%q is both a serviceinstance and a servicebinding in namespace %s: say which (si/%s or sbd/%s)", arg, ns, arg, arg)
	}
}

// condition returns the condition of type t, or nil.
func (b brokered) condition(t string) *metav1.Condition {
	for i := range b.conditions {
		if b.conditions[i].Type == t {
			return &b.conditions[i]
		}
	}
	return nil
}

// conditionText is a condition as one line: "True (Reason): message".
func conditionText(c *metav1.Condition) string {
	if c == nil {
		return "not reported yet"
	}
	s := string(c.Status)
	if c.Reason != "" {
		s += " (" + c.Reason + ")"
	}
	if c.Message != "" {
		s += ": " + c.Message
	}
	return s
}

// lastText is a last operation as one line: "provision succeeded: ...".
func lastText(l *v1alpha1.LastOperation) string {
	if l == nil {
		return "none yet"
	}
	s := fmt.Sprintf("%s %s", l.Verb, l.State)
	if l.User != "" {
		s += ", asked by " + l.User
	}
	if l.Description != "" {
		s += ": " + l.Description
	}
	return s
}
