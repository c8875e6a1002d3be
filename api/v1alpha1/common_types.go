package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Finalizer is put on every ServiceInstance and ServiceBinding so that a
// delete that bypassed admission is still carried out at the broker.
const Finalizer = "lockstep.dev/broker"

// Condition types used in the status of lockstep objects.
const (
	// ConditionReady is True when the object exists at the broker as specified.
	ConditionReady = "Ready"
	// ConditionInSync is True when what the broker holds equals what the API
	// server holds; when False its message says why not.
	ConditionInSync = "InSync"
)

// Verb is the kind of state change a broker operation carries out.
// +kubebuilder:validation:Enum=provision;update;deprovision;bind;unbind
type Verb string

// The verbs of the OSB API that lockstep carries out.
const (
	VerbProvision   Verb = "provision"
	VerbUpdate      Verb = "update"
	VerbDeprovision Verb = "deprovision"
	VerbBind        Verb = "bind"
	VerbUnbind      Verb = "unbind"
)

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
