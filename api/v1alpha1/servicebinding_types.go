package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// ServiceBindingSpec is the binding the user wants. OSB bindings cannot be
// updated, so every field is create-only: to change one, delete the binding
// and create it again.
type ServiceBindingSpec struct {
	// InstanceName is the instance, in the same namespace, to bind: a
	// ServiceInstance, or an object of the typed kind InstanceKind.
	// +kubebuilder:validation:MinLength=1
	InstanceName string `json:"instanceName" lockstep:"createonly"`
	// InstanceKind is the kind of the instance to bind: empty for a
	// ServiceInstance, else a typed kind of group services.lockstep.dev
	// (kubectl api-resources --api-group services.lockstep.dev lists them).
	// +optional
	// +kubebuilder:validation:Pattern=`^[A-Z][A-Za-z0-9]*$`
	// +kubebuilder:validation:MaxLength=63
	InstanceKind string `json:"instanceKind,omitempty" lockstep:"createonly"`
	// Parameters are passed to the broker and validated against the plan's
	// binding schema.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	// +optional
	Parameters *runtime.RawExtension `json:"parameters,omitempty" lockstep:"createonly"`
	// ParametersFrom are Secret keys whose JSON objects are merged into the
	// parameters during admission, sent to the broker and written nowhere
	// else.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	ParametersFrom []ParametersFromSource `json:"parametersFrom,omitempty" lockstep:"createonly"`
	// SecretName is the Secret that receives the credentials. Defaulted to
	// the binding's name.
	// +optional
	SecretName string `json:"secretName,omitempty" lockstep:"createonly"`
	// ExternalID is the OSB binding_id. Defaulted to a new UUID.
	// +optional
	ExternalID string `json:"externalID,omitempty" lockstep:"createonly"`
	// BindingType is the Secret's well-known entry "type" (Service Binding
	// for Kubernetes), unless the broker sent a key "type". When empty,
	// it is the service's first tag in the broker's catalog, else the
	// service's name.
	// +optional
	BindingType string `json:"bindingType,omitempty" lockstep:"createonly"`
	// SecretTransforms change the keys of the Secret, in order, every time
	// lockstep writes it.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	SecretTransforms []SecretTransform `json:"secretTransforms,omitempty" lockstep:"createonly"`
}

// ServiceBindingStatus is what the broker confirmed.
type ServiceBindingStatus struct {
	// Conditions: Ready (credentials are in the Secret) and InSync.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" lockstep:"readonly"`
	// LastOperation is the most recent broker operation.
	// +optional
	LastOperation *LastOperation `json:"lastOperation,omitempty" lockstep:"readonly"`
	// ObservedGeneration is the generation the broker last confirmed.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty" lockstep:"readonly"`
	// ParametersDigest is set when parameters came from Secrets
	// (spec.parametersFrom): a digest (HMAC-SHA256 under a key of
	// lockstep's) of all the parameters the broker was sent, so that
	// resync can compare what the broker holds without keeping the
	// Secrets' values.
	// +optional
	ParametersDigest string `json:"parametersDigest,omitempty" lockstep:"readonly"`
	// Binding names the Secret with the credentials once the bind is
	// committed and the Secret exists: lockstep's ServiceBinding is a
	// Provisioned Service of the Service Binding for Kubernetes
	// specification.
	// +optional
	Binding *BindingSecretReference `json:"binding,omitempty" lockstep:"readonly"`
}

// BindingSecretReference names the Secret of a Provisioned Service, in
// the same namespace.
type BindingSecretReference struct {
	// Name of the Secret.
	Name string `json:"name"`
}

// ServiceBinding is a binding to a ServiceInstance; its credentials go into
// a Secret owned by the binding.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=sbd,categories=lockstep
// +kubebuilder:subresource:status
// +kubebuilder:selectablefield:JSONPath=`.spec.externalID`
// +kubebuilder:printcolumn:name="Instance",type=string,JSONPath=`.spec.instanceName`
// +kubebuilder:printcolumn:name="Instance Kind",type=string,priority=1,JSONPath=`.spec.instanceKind`,description="The typed kind of the instance; none for a ServiceInstance."
// +kubebuilder:printcolumn:name="Secret",type=string,JSONPath=`.spec.secretName`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ServiceBinding struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ServiceBindingSpec   `json:"spec"`
	Status ServiceBindingStatus `json:"status,omitempty"`
}

// ServiceBindingList is a list of ServiceBindings.
//
// +kubebuilder:object:root=true
type ServiceBindingList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ServiceBinding `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ServiceBinding{}, &ServiceBindingList{})
}

// Binds reports whether the binding spec s names instance si: its name,
// and its kind (a ServiceInstance, or the model of a typed object, see
// Typed).
func (s *ServiceBindingSpec) Binds(si *ServiceInstance) bool {
	if s.InstanceName != si.Name {
		return false
	}
	if Typed(si) {
		return s.InstanceKind == si.Kind
	}
	return s.InstanceKind == ""
}

// InstanceKindName is how messages name the kind of the instance s binds:
// ServiceInstance, or its typed kind.
func (s *ServiceBindingSpec) InstanceKindName() string {
	if s.InstanceKind == "" {
		return string(KindServiceInstance)
	}
	return s.InstanceKind
}
