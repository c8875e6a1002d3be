// Package object maps an object of a typed kind to lockstep's model of an
// instance and back.
//
// A typed kind (internal/typed/render) is a kind of its own for one
// service of one broker, in the group services.lockstep.dev. Its objects
// are the source of truth: lockstep keeps no shadow ServiceInstance.
// Admission and the reconcilers read a typed object as an unstructured
// object, map it with ToInstance to the *v1alpha1.ServiceInstance that the
// unchanged instance pipeline works on, and write what the pipeline
// changed (defaults, finalizers, status) back with FromInstance.
//
// The model carries the typed kind's group, version and kind in its
// TypeMeta (v1alpha1.Typed, v1alpha1.InstanceKind), so that the journal
// names the typed kind. Its spec is the typed object's, with spec.plan as
// spec.planName and the kind's service as spec.serviceName (a typed kind
// has no spec.serviceName: it is one service); its external id is the
// instance's OSB id as on any instance, so a typed object and a
// ServiceInstance share one lock for one broker instance.
//
// Kind is what lockstep knows of a typed kind, read from its CRD by KindOf:
// the names the CRD declares and the broker, offering id and service name
// its annotations hold.
package object
