package osbapi

import (
	"encoding/json"
	"fmt"
)

// BindRequest is the body of PUT
// /v2/service_instances/:instance_id/service_bindings/:binding_id.
type BindRequest struct {
	ServiceID string `json:"service_id"`
	PlanID    string `json:"plan_id"`
	// AppGUID is deprecated in favour of BindResource.
	AppGUID string          `json:"app_guid,omitempty"`
	Context json.RawMessage `json:"context,omitempty"`
	// BindResource is kept raw: a platform may send fields BindResource
	// does not name.
	BindResource json.RawMessage `json:"bind_resource,omitempty"`
	Parameters   json.RawMessage `json:"parameters,omitempty"`
}

// BindResource is the "bind_resource" object: what the binding is for.
type BindResource struct {
	AppGUID string `json:"app_guid,omitempty"`
	Route   string `json:"route,omitempty"`
}

// Binding is the body of a bind's 200 or 201 answer and of GET of a
// binding. Credentials are secret: String and GoString never show them.
type Binding struct {
	Credentials     map[string]any   `json:"credentials"`
	SyslogDrainURL  string           `json:"syslog_drain_url,omitempty"`
	RouteServiceURL string           `json:"route_service_url,omitempty"`
	VolumeMounts    json.RawMessage  `json:"volume_mounts,omitempty"`
	Endpoints       []Endpoint       `json:"endpoints,omitempty"`
	Metadata        *BindingMetadata `json:"metadata,omitempty"`
	// Parameters is only part of GET of a binding.
	Parameters json.RawMessage `json:"parameters,omitempty"`
}

// String describes the binding without its credentials.
func (b Binding) String() string {
	return fmt.Sprintf("binding with %d credential key(s) (values hidden), %d endpoint(s)", len(b.Credentials), len(b.Endpoints))
}

// GoString is String, so that %#v does not print credentials either.
func (b Binding) GoString() string { return b.String() }

// Endpoint is a network endpoint a binding gives access to.
type Endpoint struct {
	Host     string   `json:"host"`
	Ports    []string `json:"ports"`
	Protocol string   `json:"protocol,omitempty"`
}

// BindingMetadata is the optional metadata of a binding.
type BindingMetadata struct {
	ExpiresAt   string `json:"expires_at,omitempty"`
	RenewBefore string `json:"renew_before,omitempty"`
}
