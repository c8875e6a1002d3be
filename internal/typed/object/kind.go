package object

import (
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/lockstep-dev/lockstep/internal/typed/render"
)

// AnnotationRetiring marks the CRD of a typed kind whose service its
// ServiceBroker no longer activates, from the moment the marketplace
// controller has found no object of the kind until it deletes the CRD or,
// finding objects after all, removes the mark. Its value is when the mark
// was set (RFC 3339). lockstep's webhook refuses to create objects of a
// kind whose CRD has it, so that no object is created that the CRD's
// deletion would take with it.
const AnnotationRetiring = render.Group + "/retiring"

// Retiring reports whether crd has AnnotationRetiring, and since when: the
// zero time when its value is not a time.
func Retiring(crd *apiextensionsv1.CustomResourceDefinition) (since time.Time, ok bool) {
	v, ok := crd.Annotations[AnnotationRetiring]
	if !ok {
		return time.Time{}, false
	}
	since, _ = time.Parse(time.RFC3339, v)
	return since, true
}

// Kind is a typed kind: its group, version and kind, its resource, its
// CRD, and the service of the broker it is for.
type Kind struct {
	GVK schema.GroupVersionKind
	// Plural is the kind's resource.
	Plural string
	// CRDName is the name of the kind's CustomResourceDefinition.
	CRDName string
	// Broker is the ServiceBroker whose service the kind is.
	Broker string
	// OfferingID is the service's OSB id; ServiceName its name in the
	// broker's catalog.
	OfferingID, ServiceName string
}

// GVR is the kind's group, version and resource.
func (k Kind) GVR() schema.GroupVersionResource {
	return k.GVK.GroupVersion().WithResource(k.Plural)
}

// KindOf reads the typed kind a CRD defines: false for a CRD that lockstep
// did not render (another group, another manager, without the broker,
// offering id or service name it annotates every typed kind's CRD with,
// or without the version typed kinds are served at), and for a kind named
// as one of lockstep.dev's kinds, which the journal and the locks could
// not tell from it.
func KindOf(crd *apiextensionsv1.CustomResourceDefinition) (Kind, bool) {
	if crd == nil || crd.Spec.Group != render.Group || crd.Labels[render.LabelManagedBy] != render.ManagedBy {
		return Kind{}, false
	}
	a := crd.Annotations
	k := Kind{
		GVK:     schema.GroupVersionKind{Group: render.Group, Version: render.Version, Kind: crd.Spec.Names.Kind},
		Plural:  crd.Spec.Names.Plural,
		CRDName: crd.Name,
		Broker:  a[render.AnnotationBroker], OfferingID: a[render.AnnotationOfferingID], ServiceName: a[render.AnnotationServiceName],
	}
	if k.GVK.Kind == "" || k.Plural == "" || k.Broker == "" || k.OfferingID == "" || k.ServiceName == "" ||
		render.LockstepKind(k.GVK.Kind) {
		return Kind{}, false
	}
	for _, v := range crd.Spec.Versions {
		if v.Name == render.Version && v.Served {
			return k, true
		}
	}
	return Kind{}, false
}

// RequiredParameters are the members of spec.parameters that crd, a typed
// kind's CRD, requires (a parameter every plan requires at creation): the
// API server refuses an object without them in spec.parameters, where
// spec.parametersFrom may still give them to lockstep's checks.
func RequiredParameters(crd *apiextensionsv1.CustomResourceDefinition) []string {
	for _, v := range crd.Spec.Versions {
		if v.Name == render.Version && v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
			return v.Schema.OpenAPIV3Schema.Properties["spec"].Properties["parameters"].Required
		}
	}
	return nil
}

// Established reports whether crd's Established condition is True: the
// API server serves its kind. A nil crd is not established.
func Established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	if crd == nil {
		return false
	}
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}
