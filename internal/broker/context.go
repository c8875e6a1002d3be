package broker

// Context is the OSB "context" object of the Kubernetes platform profile:
// where the instance or binding lives. Platform defaults to "kubernetes".
type Context struct {
	Platform             string            `json:"platform"`
	Namespace            string            `json:"namespace,omitempty"`
	ClusterID            string            `json:"clusterid,omitempty"`
	InstanceName         string            `json:"instance_name,omitempty"`
	InstanceAnnotations  map[string]string `json:"instance_annotations,omitempty"`
	NamespaceAnnotations map[string]string `json:"namespace_annotations,omitempty"`
}

// withPlatform returns c with Platform defaulted.
func (c Context) withPlatform() Context {
	if c.Platform == "" {
		c.Platform = Platform
	}
	return c
}

// MaintenanceInfo is a plan's or instance's maintenance version.
type MaintenanceInfo struct {
	Version     string `json:"version"`
	Description string `json:"description,omitempty"`
}

// InstanceMetadata is the optional metadata a broker returns for an instance.
type InstanceMetadata struct {
	Labels     map[string]any `json:"labels,omitempty"`
	Attributes map[string]any `json:"attributes,omitempty"`
}

// BindingMetadata is the optional metadata a broker returns for a binding.
type BindingMetadata struct {
	ExpiresAt   string `json:"expires_at,omitempty"`
	RenewBefore string `json:"renew_before,omitempty"`
}
