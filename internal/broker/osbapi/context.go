package osbapi

import "github.com/google/uuid"

// KubernetesPlatform is the platform name of the OSB Kubernetes profile, in
// contexts and in the originating identity header.
const KubernetesPlatform = "kubernetes"

// Context is the "context" object of the Kubernetes profile: where an
// instance or binding lives. A broker reads other platforms' contexts as
// raw JSON (the request bodies keep context raw).
type Context struct {
	Platform             string            `json:"platform"`
	Namespace            string            `json:"namespace,omitempty"`
	ClusterID            string            `json:"clusterid,omitempty"`
	InstanceName         string            `json:"instance_name,omitempty"`
	InstanceAnnotations  map[string]string `json:"instance_annotations,omitempty"`
	NamespaceAnnotations map[string]string `json:"namespace_annotations,omitempty"`
}

// WithPlatform returns c with Platform defaulted to KubernetesPlatform.
func (c Context) WithPlatform() Context {
	if c.Platform == "" {
		c.Platform = KubernetesPlatform
	}
	return c
}

// guidSpace is the UUID namespace of the organization and space GUIDs
// derived for a Kubernetes cluster and namespace.
var guidSpace = uuid.MustParse("5d6f2c9e-3b1a-4f0e-9a57-6c1f0d2b8e41")

// OrganizationGUID is the organization_guid of the Kubernetes profile: the
// cluster's id, or a fixed GUID when the cluster has none. The
// specification requires the field on a provision (deprecated in favour of
// context, but brokers still check it).
func (c Context) OrganizationGUID() string {
	if c.ClusterID != "" {
		return c.ClusterID
	}
	return uuid.NewSHA1(guidSpace, []byte("cluster")).String()
}

// SpaceGUID is the space_guid of the Kubernetes profile: a GUID derived
// from the cluster and the namespace, the same for every request about the
// same namespace.
func (c Context) SpaceGUID() string {
	return uuid.NewSHA1(guidSpace, []byte("cluster/"+c.ClusterID+"/namespace/"+c.Namespace)).String()
}
