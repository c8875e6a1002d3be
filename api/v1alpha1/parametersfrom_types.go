package v1alpha1

// ParametersFromSource is one source of parameters besides
// spec.parameters: a Secret key whose value is a JSON object. Its members
// are merged into the parameters sent to the broker; a parameter may come
// from one place only. The values are read during admission and sent to the
// broker, never written anywhere else.
type ParametersFromSource struct {
	// SecretKeyRef names the Secret, in the object's namespace, and its key.
	SecretKeyRef SecretKeyReference `json:"secretKeyRef"`
}

// SecretKeyReference names a key of a Secret in the object's namespace.
type SecretKeyReference struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// Key in the Secret's data whose value is a JSON object.
	// +kubebuilder:validation:MinLength=1
	Key string `json:"key"`
}
