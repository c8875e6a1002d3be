package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Finalizer is put on every ServiceInstance and ServiceBinding so that a
// delete that bypassed admission is still carried out at the broker.
const Finalizer = "lockstep.dev/broker"

// DefaultedLabel is put, with the value "true", on every ServiceInstance,
// ServiceBinding and object of a typed kind when lockstep's mutating
// webhook has defaulted it. The webhooks that refill defaults on UPDATE
// select only objects without it (an objectSelector), so that the API
// server spends nothing on matching the updates of objects already
// defaulted; a request that drops the label gets it back with the
// defaults.
const DefaultedLabel = "lockstep.dev/defaulted"

// Condition types used in the status of lockstep objects.
const (
	// ConditionReady is True when the object exists at the broker as specified.
	ConditionReady = "Ready"
	// ConditionInSync is True when what the broker holds equals what the API
	// server holds; when False its message says why not.
	ConditionInSync = "InSync"
	// ConditionAccessRules, on a ServiceBroker, is True when its access
	// rules (spec.access) are in force, and False, with the reason, when
	// they cannot be used: then no namespace may use its plans.
	ConditionAccessRules = "AccessRules"
)

// Verb is the kind of state change a broker operation carries out.
// +kubebuilder:validation:Enum=provision;update;deprovision;bind;unbind;adopt;detach
type Verb string

// The verbs of the OSB API that lockstep carries out.
const (
	VerbProvision   Verb = "provision"
	VerbUpdate      Verb = "update"
	VerbDeprovision Verb = "deprovision"
	VerbBind        Verb = "bind"
	VerbUnbind      Verb = "unbind"
)

// The journal's verbs for what lockstep does without changing the broker.
const (
	// VerbAdopt: an object was created for an instance or binding that
	// already existed at the broker, after the broker showed it equal.
	VerbAdopt Verb = "adopt"
	// VerbDetach: an object was deleted and the broker kept what it held
	// (reconcile policy detach-on-delete or observe).
	VerbDetach Verb = "detach"
)

// AnnotationReconcilePolicy says how lockstep treats an object at its
// broker. Changing it is a metadata-only update, always allowed, also when
// the broker is down or gone: it is the way out of a delete the broker
// cannot carry out.
const AnnotationReconcilePolicy = "lockstep.dev/reconcile-policy"

// ReconcilePolicy is a value of AnnotationReconcilePolicy.
type ReconcilePolicy string

// The reconcile policies.
const (
	// PolicyManage (the default): changes and deletes go to the broker.
	PolicyManage ReconcilePolicy = "manage"
	// PolicyDetachOnDelete: changes go to the broker, but deleting the
	// object leaves the broker's instance or binding in place.
	PolicyDetachOnDelete ReconcilePolicy = "detach-on-delete"
	// PolicyObserve: lockstep never changes the broker for this object:
	// spec changes are refused, and a delete only removes the object.
	PolicyObserve ReconcilePolicy = "observe"
)

// PolicyOf returns an object's reconcile policy; false when the annotation
// holds a value that is not a policy.
func PolicyOf(obj metav1.Object) (ReconcilePolicy, bool) {
	switch p := ReconcilePolicy(obj.GetAnnotations()[AnnotationReconcilePolicy]); p {
	case "":
		return PolicyManage, true
	case PolicyManage, PolicyDetachOnDelete, PolicyObserve:
		return p, true
	default:
		return p, false
	}
}

// KeepsBrokerOnDelete reports whether deleting obj leaves what the broker
// holds in place (detach-on-delete or observe).
func KeepsBrokerOnDelete(obj metav1.Object) bool {
	p, ok := PolicyOf(obj)
	return ok && (p == PolicyDetachOnDelete || p == PolicyObserve)
}

// AnnotationAdopt, set to "true" on create, makes lockstep adopt the
// instance or binding that already exists at the broker under
// spec.externalID instead of creating one.
const AnnotationAdopt = "lockstep.dev/adopt"

// The ClusterRole lockstep-adopt (deploy/rbac/adopt_role.yaml) is
// generated from this marker; no default or aggregated role grants it.
//
// +kubebuilder:rbac:groups=lockstep.dev,resources=serviceinstances;servicebindings,verbs=adopt
// +kubebuilder:rbac:groups=services.lockstep.dev,resources=*,verbs=adopt

// PermissionAdopt is the RBAC verb that adopting needs, on serviceinstances
// or servicebindings, or the resource of a typed kind (group
// services.lockstep.dev), in the object's namespace: adopting takes over what a
// broker holds, which lockstep did not create for this object, so the
// right to create objects does not imply it.
const PermissionAdopt = "adopt"

// AdoptRole is the ClusterRole that grants PermissionAdopt.
const AdoptRole = "lockstep-adopt"

// Adopting reports whether obj asks to adopt what the broker holds.
func Adopting(obj metav1.Object) bool {
	return obj.GetAnnotations()[AnnotationAdopt] == "true"
}

// ExternalIDOf is the broker's id of an instance or binding
// (spec.externalID); "" for any other object.
func ExternalIDOf(obj metav1.Object) string {
	switch o := obj.(type) {
	case *ServiceInstance:
		return o.Spec.ExternalID
	case *ServiceBinding:
		return o.Spec.ExternalID
	}
	return ""
}

// FieldExternalID is the field selector of spec.externalID, which
// ServiceInstances and ServiceBindings declare selectable: an external id
// belongs to one object of its kind in the cluster, and admission asks the
// API server which one holds it.
const FieldExternalID = "spec.externalID"

// OperationState is the broker's view of an operation, as in OSB
// last_operation.
// +kubebuilder:validation:Enum="in progress";succeeded;failed
type OperationState string

// The states of OSB last_operation.
const (
	StateInProgress OperationState = "in progress"
	StateSucceeded  OperationState = "succeeded"
	StateFailed     OperationState = "failed"
)

// LastOperation summarizes the most recent broker operation on an object.
type LastOperation struct {
	// Verb is what was asked of the broker.
	Verb Verb `json:"verb"`
	// State is the broker's answer so far.
	State OperationState `json:"state"`
	// Description is the broker's own description of the outcome.
	// +optional
	Description string `json:"description,omitempty"`
	// OperationName names the BrokerOperation that records this operation.
	// +optional
	OperationName string `json:"operationName,omitempty"`
	// User is the Kubernetes user who asked for the change.
	// +optional
	User string `json:"user,omitempty"`
	// StartTime is when lockstep sent the request to the broker.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// EndTime is when the broker finished the operation.
	// +optional
	EndTime *metav1.Time `json:"endTime,omitempty"`
}

// LocalObjectReference names an object in the same namespace.
type LocalObjectReference struct {
	// Name of the referenced object.
	Name string `json:"name"`
}
