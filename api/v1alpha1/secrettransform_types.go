package v1alpha1

// SecretTransform is one change to the keys of a binding's Secret, applied
// in order after the broker's credentials and the well-known entries are
// in place, every time lockstep writes the Secret. Exactly one of its
// fields is set.
type SecretTransform struct {
	// RenameKey moves a key's value to another key.
	// +optional
	RenameKey *RenameKeyTransform `json:"renameKey,omitempty"`
	// AddKey adds a key with a literal value, a template over the other
	// keys, or a value extracted from the credentials with a JSON path.
	// +optional
	AddKey *AddKeyTransform `json:"addKey,omitempty"`
	// AddKeysFrom copies the keys of another Secret in the binding's
	// namespace; the user who creates the binding must be allowed to get
	// that Secret.
	// +optional
	AddKeysFrom *AddKeysFromTransform `json:"addKeysFrom,omitempty"`
	// RemoveKey removes a key.
	// +optional
	RemoveKey *RemoveKeyTransform `json:"removeKey,omitempty"`
}

// RenameKeyTransform moves the value of key From to key To.
type RenameKeyTransform struct {
	// From is the key to rename; the Secret must hold it.
	// +kubebuilder:validation:MinLength=1
	From string `json:"from"`
	// To is its new name; a value it held is replaced.
	// +kubebuilder:validation:MinLength=1
	To string `json:"to"`
}

// AddKeyTransform adds the key Key with exactly one of Value, Template or
// JSONPath; a value Key held is replaced.
type AddKeyTransform struct {
	// Key is the key to add.
	// +kubebuilder:validation:MinLength=1
	Key string `json:"key"`
	// Value is the literal value.
	// +optional
	Value *string `json:"value,omitempty"`
	// Template is a Go template (text/template) over the Secret's keys
	// as they are at this point, for example
	// "postgres://{{.username}}:{{.password}}@{{.host}}:{{.port}}/{{.database}}";
	// a key it names must exist. At most 4096 bytes; it runs within bounds
	// on its steps, its work, its output and its time, and one over a
	// bound is refused at admission. It may not define or call other
	// templates.
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	Template *string `json:"template,omitempty"`
	// JSONPath extracts a value from the broker's credentials as the
	// broker sent them (nested objects included), in kubectl's JSONPath
	// syntax, for example "{.connection.host}". A string is taken as it
	// is, anything else as JSON. At most 512 bytes, with no range or
	// union and at most one recursive descent (..).
	// +kubebuilder:validation:MaxLength=512
	// +optional
	JSONPath *string `json:"jsonPath,omitempty"`
}

// AddKeysFromTransform copies all the keys of a Secret in the binding's
// namespace; keys the Secret of the binding holds are replaced.
type AddKeysFromTransform struct {
	// SecretRef names the Secret.
	SecretRef LocalSecretReference `json:"secretRef"`
}

// LocalSecretReference names a Secret in the object's namespace.
type LocalSecretReference struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// RemoveKeyTransform removes a key; removing a key the Secret does not
// hold is no change.
type RemoveKeyTransform struct {
	// Key is the key to remove.
	// +kubebuilder:validation:MinLength=1
	Key string `json:"key"`
}
