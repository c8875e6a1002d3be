package admission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	admissionv1 "k8s.io/api/admission/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/typed/object"
	"github.com/lockstep-dev/lockstep/internal/typed/render"
)

// TypedKinds finds the typed kind of a request about an object of the
// group of typed kinds: the kind's CustomResourceDefinition
// (<resource>.services.lockstep.dev), read through a cached reader, as
// object.KindOf reads it.
type TypedKinds struct {
	// Reader reads CustomResourceDefinitions (the manager's cache).
	Reader client.Reader
	// Direct, when set, reads a CRD past the cache when the cache does not
	// have it as a typed kind: a CRD applied a moment ago may not be in
	// the cache yet, and its first objects are not refused for that.
	Direct client.Reader

	// schemas are the kinds' schema checkers, by CRD name, each for the
	// CRD's resource version it was made of.
	schemas sync.Map // string -> *kindSchema
}

// kindSchema is the schema checker of one version of a kind's CRD.
type kindSchema struct {
	resourceVersion string
	checker         *object.SchemaChecker
}

// schemaErrors are the errors the API server finds in the request's
// typed object t.new against the schema of kind's CRD (see
// object.SchemaChecker), read from the cache; the checker is made once
// per version of the CRD.
func (k *TypedKinds) schemaErrors(ctx context.Context, kind object.Kind, t *typedObjects) (field.ErrorList, error) {
	if t.new == nil {
		return nil, nil
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := k.Reader.Get(ctx, client.ObjectKey{Name: kind.CRDName}, &crd); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, unavailable("could not read CustomResourceDefinition %s, which defines the kind: %v; nothing was changed and the broker was not called: retry", kind.CRDName, err)
	}
	var checker *object.SchemaChecker
	if cached, ok := k.schemas.Load(crd.Name); ok && cached.(*kindSchema).resourceVersion == crd.ResourceVersion {
		checker = cached.(*kindSchema).checker
	} else {
		c, err := object.NewSchemaChecker(&crd)
		if err != nil {
			return nil, nil // the API server says what it finds
		}
		checker = c
		k.schemas.Store(crd.Name, &kindSchema{resourceVersion: crd.ResourceVersion, checker: c})
	}
	var old map[string]any
	if t.old != nil {
		old = t.old.Object
	}
	return checker.Check(t.new.Object, old), nil
}

// kindOf returns the typed kind of req's resource; ok is false for a
// resource of the group whose CRD lockstep did not render. The error
// means the CRD could not be read.
func (k *TypedKinds) kindOf(ctx context.Context, req admission.Request) (_ object.Kind, ok bool, _ error) {
	if req.Resource.Group != render.Group {
		return object.Kind{}, false, nil
	}
	name := req.Resource.Resource + "." + render.Group
	kind, ok, err := readKind(ctx, k.Reader, name)
	if ok || err != nil || k.Direct == nil {
		return kind, ok, err
	}
	return readKind(ctx, k.Direct, name)
}

// readKind reads the typed kind of CRD name from reader; ok is false when
// it has none.
func readKind(ctx context.Context, reader client.Reader, name string) (_ object.Kind, ok bool, _ error) {
	var crd apiextensionsv1.CustomResourceDefinition
	if err := reader.Get(ctx, client.ObjectKey{Name: name}, &crd); err != nil {
		if apierrors.IsNotFound(err) {
			return object.Kind{}, false, nil
		}
		return object.Kind{}, false, unavailable("could not read CustomResourceDefinition %s, which defines the kind: %v; nothing was changed and the broker was not called: retry",
			name, err)
	}
	kind, ok := object.KindOf(&crd)
	return kind, ok, nil
}

// refuseRetiring refuses to create an object of kind k while the kind's
// CRD is marked retiring (object.AnnotationRetiring): the marketplace
// controller is about to delete the CRD, and an object created now would
// go with it. The CRD is read past the cache (Direct, when set): the mark
// holds on every replica from the moment it is written, where a cache may
// not have it yet; a typed create costs a broker call, so the one read
// more costs little, and updates and deletes never read it.
func (k *TypedKinds) refuseRetiring(ctx context.Context, kind object.Kind) error {
	reader := k.Direct
	if reader == nil {
		reader = k.Reader
	}
	return refuseRetiring(ctx, reader, kind)
}

// refuseRetiring is TypedKinds.refuseRetiring with the CRD read from
// reader.
func refuseRetiring(ctx context.Context, reader client.Reader, kind object.Kind) error {
	var crd apiextensionsv1.CustomResourceDefinition
	if err := reader.Get(ctx, client.ObjectKey{Name: kind.CRDName}, &crd); err != nil {
		if apierrors.IsNotFound(err) {
			return nil // the API server refuses the create itself
		}
		return unavailable("could not read CustomResourceDefinition %s, which defines the kind: %v; nothing was changed and the broker was not called: retry",
			kind.CRDName, err)
	}
	if _, retiring := object.Retiring(&crd); !retiring {
		return nil
	}
	return statusError(http.StatusForbidden, metav1.StatusReasonForbidden,
		"kind %s (service %q) is being deactivated on ServiceBroker %q: its CustomResourceDefinition %s is deleted once no object of it is left, so no new object of it is created; "+
			"nothing was created and the broker was not called. Ask the cluster administrator to keep the service in ServiceBroker %q spec.typedKinds, or create a ServiceInstance of service %q instead",
		kind.GVK.Kind, kind.ServiceName, kind.Broker, kind.CRDName, kind.Broker, kind.ServiceName)
}

// notLockstep refuses to create or change an object of the group of typed
// kinds whose kind lockstep did not render from a broker's catalog: it has
// no broker to carry it to.
func notLockstep(req admission.Request) error {
	return statusError(http.StatusForbidden, metav1.StatusReasonForbidden,
		"kind %s of group %s was not made by lockstep from a broker's catalog (its CustomResourceDefinition %s.%s lacks lockstep's labels and annotations): "+
			"lockstep cannot carry it to a broker, so it is not created or changed; activate the service on its ServiceBroker (spec.typedKinds) to get a kind lockstep serves",
		req.Kind.Kind, render.Group, req.Resource.Resource, render.Group)
}

// typedObjects maps the objects of a request about typed kind k to their
// models (object.ToInstance).
type typedObjects struct {
	kind object.Kind
	// new and old are the request's objects as they came, and newModel
	// and oldModel their models; nil where the request has none.
	new, old           *unstructured.Unstructured
	newModel, oldModel *v1alpha1.ServiceInstance
}

// mapObjects reads the request's objects and maps them to the model. An
// object that names another broker than its kind's is refused: a typed
// kind is one service of one broker.
func mapObjects(req admission.Request, k object.Kind) (*typedObjects, error) {
	t := &typedObjects{kind: k}
	var err error
	if t.new, t.newModel, err = mapObject(req.Object.Raw, k); err != nil {
		return nil, err
	}
	if t.old, t.oldModel, err = mapObject(req.OldObject.Raw, k); err != nil {
		return nil, err
	}
	if req.Operation == admissionv1.Delete || t.newModel == nil || t.newModel.Spec.BrokerName == k.Broker {
		return t, nil
	}
	return nil, invalid(k.GVK.GroupKind(), t.new.GetName(), field.ErrorList{field.Invalid(field.NewPath("spec", "brokerName"), t.newModel.Spec.BrokerName,
		fmt.Sprintf("kind %s is service %q of broker %q: leave spec.brokerName out, or name %q", k.GVK.Kind, k.ServiceName, k.Broker, k.Broker))})
}

// mapObject reads one raw object and maps it; nil, nil for none.
func mapObject(raw []byte, k object.Kind) (*unstructured.Unstructured, *v1alpha1.ServiceInstance, error) {
	if len(raw) == 0 {
		return nil, nil, nil
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(raw); err != nil {
		return nil, nil, statusError(http.StatusBadRequest, metav1.StatusReasonBadRequest, "could not read the %s: %v", k.GVK.Kind, err)
	}
	si, err := object.ToInstance(u, k)
	var wrong *json.UnmarshalTypeError
	switch {
	case errors.As(err, &wrong) && wrong.Field != "":
		// A field of the wrong type, named as the API server names it.
		parts := strings.Split(wrong.Field, ".")
		return nil, nil, invalid(k.GVK.GroupKind(), u.GetName(), field.ErrorList{field.Invalid(field.NewPath(parts[0], parts[1:]...), wrong.Value, "must be "+jsonType(wrong.Type))})
	case err != nil:
		return nil, nil, statusError(http.StatusBadRequest, metav1.StatusReasonBadRequest, "%v", err)
	}
	return u, si, nil
}

// modelRequest is req with its objects replaced by their models, as the
// instance chain reads them. asInstance gives the models the TypeMeta of
// a ServiceInstance (for a decoder that knows only lockstep's kinds).
func (t *typedObjects) modelRequest(req admission.Request, asInstance bool) (admission.Request, error) {
	out := req
	var err error
	if out.Object.Raw, err = modelJSON(t.newModel, asInstance); err != nil {
		return req, err
	}
	if out.OldObject.Raw, err = modelJSON(t.oldModel, asInstance); err != nil {
		return req, err
	}
	out.Object.Object, out.OldObject.Object = nil, nil
	return out, nil
}

func modelJSON(si *v1alpha1.ServiceInstance, asInstance bool) ([]byte, error) {
	if si == nil {
		return nil, nil
	}
	if asInstance {
		c := *si
		c.TypeMeta = metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: string(v1alpha1.KindServiceInstance)}
		si = &c
	}
	return json.Marshal(si)
}
