package plugin

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/typed/render"
)

// kindRef is a kind of object lockstep manages: ServiceInstance,
// ServiceBinding, or a typed kind (group services.lockstep.dev), whose
// objects are instances as a ServiceInstance is.
type kindRef struct {
	gvk schema.GroupVersionKind
}

var (
	instanceKind = kindRef{gvk: v1alpha1.GroupVersion.WithKind(string(v1alpha1.KindServiceInstance))}
	bindingKind  = kindRef{gvk: v1alpha1.GroupVersion.WithKind(string(v1alpha1.KindServiceBinding))}
)

// target is the kind as the journal's records name it.
func (k kindRef) target() v1alpha1.TargetKind { return v1alpha1.TargetKind(k.gvk.Kind) }

// typed reports whether k is a typed kind.
func (k kindRef) typed() bool { return k.gvk.Group == render.Group }

// word is the kind as kubectl takes it in KIND/NAME: its name, lowercased.
func (k kindRef) word() string { return strings.ToLower(k.gvk.Kind) }

// brokered is a ServiceInstance, a ServiceBinding or an object of a typed
// kind, read as what the commands need of any of them.
type brokered struct {
	obj        client.Object
	kind       kindRef
	conditions []metav1.Condition
	last       *v1alpha1.LastOperation
	// observed is the generation the broker last confirmed.
	observed int64
	// broker is the instance's ServiceBroker ("" for a binding until its
	// instance is read).
	broker string
}

// resource is how kubectl names the object: serviceinstance/NAME,
// quick/NAME.
func (b brokered) resource() string {
	return b.kind.word() + "/" + b.obj.GetName()
}

// kinds are the names a user may give lockstep.dev's kinds in KIND/NAME,
// as kubectl knows them (kinds, plurals, short names) and shorter; a
// typed kind is found through the API server's discovery (kindFor).
var kinds = map[string]kindRef{
	"serviceinstance": instanceKind, "serviceinstances": instanceKind, "si": instanceKind, "instance": instanceKind,
	"servicebinding": bindingKind, "servicebindings": bindingKind, "sbd": bindingKind, "binding": bindingKind,
}

// newObject returns an empty object of kind.
func newObject(kind kindRef) client.Object {
	switch {
	case kind == bindingKind:
		return &v1alpha1.ServiceBinding{}
	case kind.typed():
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(kind.gvk)
		return u
	}
	return &v1alpha1.ServiceInstance{}
}

// get reads an object of kind.
func get(ctx context.Context, c client.Client, kind kindRef, ns, name string) (brokered, error) {
	obj := newObject(kind)
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
		return brokered{}, err
	}
	return view(obj), nil
}

// typedParts are the parts of an object of a typed kind the commands
// read: its status is a ServiceInstance's.
type typedParts struct {
	Spec struct {
		BrokerName string `json:"brokerName"`
	} `json:"spec"`
	Status v1alpha1.ServiceInstanceStatus `json:"status"`
}

// view reads obj (a ServiceInstance, a ServiceBinding or an object of a
// typed kind) as a brokered.
func view(obj client.Object) brokered {
	switch o := obj.(type) {
	case *v1alpha1.ServiceInstance:
		return brokered{obj: o, kind: instanceKind, conditions: o.Status.Conditions, last: o.Status.LastOperation,
			observed: o.Status.ObservedGeneration, broker: o.Spec.BrokerName}
	case *v1alpha1.ServiceBinding:
		return brokered{obj: o, kind: bindingKind, conditions: o.Status.Conditions, last: o.Status.LastOperation, observed: o.Status.ObservedGeneration}
	case *unstructured.Unstructured:
		var parts typedParts
		// A status lockstep did not write may not read: the object is
		// then shown without it.
		_ = runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &parts)
		return brokered{obj: o, kind: kindRef{gvk: o.GroupVersionKind()}, conditions: parts.Status.Conditions, last: parts.Status.LastOperation,
			observed: parts.Status.ObservedGeneration, broker: parts.Spec.BrokerName}
	}
	panic(fmt.Sprintf("plugin: %T is not an instance or binding", obj))
}

// objectsHelp says how to name an object.
const objectsHelp = "name a serviceinstance/NAME (si/NAME), a servicebinding/NAME (sbd/NAME), or KIND/NAME of a typed kind (kubectl api-resources --api-group=" + render.Group + ")"

// resolve finds the object a user named: KIND/NAME, or a bare NAME when
// exactly one object of lockstep's kinds has it.
func (s *session) resolve(ctx context.Context, c client.Client, ns, arg string) (brokered, error) {
	if k, name, ok := strings.Cut(arg, "/"); ok {
		if name == "" {
			return brokered{}, fmt.Errorf("%q: %s", arg, objectsHelp)
		}
		kind, err := s.kindFor(k)
		if err != nil {
			return brokered{}, err
		}
		return get(ctx, c, kind, ns, name)
	}
	candidates := []kindRef{instanceKind, bindingKind}
	typed, err := s.typedKinds()
	if err != nil {
		return brokered{}, err
	}
	candidates = append(candidates, typed...)
	var found []brokered
	for _, kind := range candidates {
		b, err := get(ctx, c, kind, ns, arg)
		switch {
		case err == nil:
			found = append(found, b)
		case !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err):
			return brokered{}, err
		}
	}
	switch len(found) {
	case 0:
		return brokered{}, fmt.Errorf("no serviceinstance, servicebinding or object of a typed kind %q in namespace %s", arg, ns)
	case 1:
		return found[0], nil
	}
	var names []string
	for _, b := range found {
		names = append(names, b.resource())
	}
	return brokered{}, fmt.Errorf("%q is %s in namespace %s: say which", arg, strings.Join(names, " and "), ns)
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
