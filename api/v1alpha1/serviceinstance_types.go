package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ServiceInstanceSpec is the instance the user wants the broker to hold.
type ServiceInstanceSpec struct {
	// BrokerName is the ServiceBroker that provisions the instance.
	// Defaulted when exactly one ServiceBroker exists.
	// +optional
	BrokerName string `json:"brokerName,omitempty" lockstep:"createonly"`
	// ServiceName is the name of the service in the broker's catalog.
	// +kubebuilder:validation:MinLength=1
	ServiceName string `json:"serviceName" lockstep:"createonly"`
	// PlanName is the name of the plan; it may change where the catalog
	// says the plan is updateable.
	// +kubebuilder:validation:MinLength=1
	PlanName string `json:"planName"`
	// Parameters are passed to the broker and validated against the plan's
	// JSON Schema.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	// +optional
	Parameters *runtime.RawExtension `json:"parameters,omitempty"`
	// ParametersFrom are Secret keys whose JSON objects are merged into the
	// parameters during admission. A Secret's change reaches the broker only
	// with a change of the spec: bump ParametersFromGeneration to send the
	// Secrets' current values again.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	ParametersFrom []ParametersFromSource `json:"parametersFrom,omitempty"`
	// ParametersFromGeneration is any number the user changes to re-read
	// the Secrets of ParametersFrom and send the parameters to the broker
	// again (a Secret's change alone changes nothing).
	// +optional
	ParametersFromGeneration int64 `json:"parametersFromGeneration,omitempty"`
	// ExternalID is the OSB instance_id. Defaulted to a new UUID.
	// +optional
	ExternalID string `json:"externalID,omitempty" lockstep:"createonly"`
}

// ServiceInstanceStatus is what the broker confirmed.
type ServiceInstanceStatus struct {
	// Conditions: Ready (the broker holds the instance as specified) and
	// InSync (what the broker holds equals this object).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" lockstep:"readonly"`
	// LastOperation is the most recent broker operation.
	// +optional
	LastOperation *LastOperation `json:"lastOperation,omitempty" lockstep:"readonly"`
	// DashboardURL is the broker's dashboard for the instance.
	// +optional
	DashboardURL string `json:"dashboardURL,omitempty" lockstep:"readonly"`
	// LastApplied is what the broker last confirmed for this object: resync
	// compares what the broker holds with it.
	// +optional
	LastApplied *AppliedInstance `json:"lastApplied,omitempty" lockstep:"readonly"`
	// ObservedGeneration is the generation the broker last confirmed.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty" lockstep:"readonly"`
}

// AppliedInstance is the plan and parameters the broker last confirmed for
// an instance.
type AppliedInstance struct {
	// PlanName and PlanID are the plan the broker holds the instance on.
	PlanName string `json:"planName"`
	PlanID   string `json:"planID"`
	// Parameters are spec.parameters as last applied: without the
	// parameters from Secrets (spec.parametersFrom), whose values are never
	// written into status.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	Parameters *runtime.RawExtension `json:"parameters,omitempty"`
	// ParametersDigest is set when parameters came from Secrets: a digest
	// (HMAC-SHA256 under a key of lockstep's) of all the parameters the
	// broker was sent, Secrets' values included, so that resync can
	// compare what the broker holds without keeping the values.
	// +optional
	ParametersDigest string `json:"parametersDigest,omitempty"`
	// CreateOnlyDigest is set when parameters came from Secrets: a digest
	// (keyed, as ParametersDigest) of the create-only parameters sent, so
	// that admission can refuse a re-apply after a Secret changed one of
	// them.
	// +optional
	CreateOnlyDigest string `json:"createOnlyDigest,omitempty"`
}

// ServiceInstance is an instance of a service held by an OSB broker.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=si,categories=lockstep
// +kubebuilder:subresource:status
// +kubebuilder:selectablefield:JSONPath=`.spec.externalID`
// +kubebuilder:printcolumn:name="Broker",type=string,JSONPath=`.spec.brokerName`
// +kubebuilder:printcolumn:name="Service",type=string,JSONPath=`.spec.serviceName`
// +kubebuilder:printcolumn:name="Plan",type=string,JSONPath=`.spec.planName`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="In Sync",type=string,JSONPath=`.status.conditions[?(@.type=="InSync")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="InSync")].reason`
// +kubebuilder:printcolumn:name="Last Op",type=string,JSONPath=`.status.lastOperation.verb`
// +kubebuilder:printcolumn:name="Result",type=string,JSONPath=`.status.lastOperation.state`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ServiceInstance struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ServiceInstanceSpec   `json:"spec"`
	Status ServiceInstanceStatus `json:"status,omitempty"`
}

// ServiceInstanceList is a list of ServiceInstances.
//
// +kubebuilder:object:root=true
type ServiceInstanceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ServiceInstance `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ServiceInstance{}, &ServiceInstanceList{})
}

// Typed reports whether si is the model of an object of a typed kind: an
// instance whose TypeMeta carries a group other than lockstep.dev (the
// group of typed kinds, services.lockstep.dev) and a kind. Admission and
// the reconcilers map such an object to a ServiceInstance and keep its
// kind there.
func Typed(si *ServiceInstance) bool {
	gv, err := schema.ParseGroupVersion(si.APIVersion)
	return err == nil && gv.Group != "" && gv.Group != GroupVersion.Group && si.Kind != ""
}

// InstanceKind is the kind an operation record names for instance si:
// ServiceInstance, or the typed kind of the object si is the model of.
func InstanceKind(si *ServiceInstance) TargetKind {
	if Typed(si) {
		return TargetKind(si.Kind)
	}
	return KindServiceInstance
}

// InstanceAPIGroup is the group an operation record names for instance
// si: "" (lockstep.dev) for a ServiceInstance, the typed kind's group for
// the model of a typed object.
func InstanceAPIGroup(si *ServiceInstance) string {
	if Typed(si) {
		return si.GroupVersionKind().Group
	}
	return ""
}
