package broker

import "github.com/google/uuid"

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

// guidSpace is the UUID namespace of the organization and space GUIDs
// lockstep derives for a Kubernetes cluster and namespace.
var guidSpace = uuid.MustParse("5d6f2c9e-3b1a-4f0e-9a57-6c1f0d2b8e41")

// OrganizationGUID is the OSB organization_guid of the Kubernetes profile:
// the cluster's id, or a fixed GUID when the cluster has none. The
// specification requires the field on a provision (deprecated in favour of
// context, but brokers still check it).
func (c Context) OrganizationGUID() string {
	if c.ClusterID != "" {
		return c.ClusterID
	}
	return uuid.NewSHA1(guidSpace, []byte("cluster")).String()
}

// SpaceGUID is the OSB space_guid of the Kubernetes profile: a GUID derived
// from the cluster and the namespace, the same for every request about the
// same namespace.
func (c Context) SpaceGUID() string {
	return uuid.NewSHA1(guidSpace, []byte("cluster/"+c.ClusterID+"/namespace/"+c.Namespace)).String()
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
