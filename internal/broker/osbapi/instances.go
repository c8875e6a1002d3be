package osbapi

import "encoding/json"

// ProvisionRequest is the body of PUT /v2/service_instances/:instance_id.
type ProvisionRequest struct {
	ServiceID string `json:"service_id"`
	PlanID    string `json:"plan_id"`
	// Context is kept raw: its shape depends on the platform (Context is
	// the Kubernetes one).
	Context json.RawMessage `json:"context,omitempty"`
	// OrganizationGUID and SpaceGUID are required, though deprecated in
	// favour of Context.
	OrganizationGUID string           `json:"organization_guid"`
	SpaceGUID        string           `json:"space_guid"`
	Parameters       json.RawMessage  `json:"parameters,omitempty"`
	MaintenanceInfo  *MaintenanceInfo `json:"maintenance_info,omitempty"`
}

// UpdateRequest is the body of PATCH /v2/service_instances/:instance_id.
type UpdateRequest struct {
	ServiceID string `json:"service_id"`
	// PlanID is empty when the plan does not change.
	PlanID  string          `json:"plan_id,omitempty"`
	Context json.RawMessage `json:"context,omitempty"`
	// Parameters absent leaves the instance's parameters as they are.
	Parameters      json.RawMessage  `json:"parameters,omitempty"`
	PreviousValues  *PreviousValues  `json:"previous_values,omitempty"`
	MaintenanceInfo *MaintenanceInfo `json:"maintenance_info,omitempty"`
}

// PreviousValues is the "previous_values" object of an update: the
// instance as it was before.
type PreviousValues struct {
	ServiceID       string           `json:"service_id,omitempty"`
	PlanID          string           `json:"plan_id,omitempty"`
	OrganizationID  string           `json:"organization_id,omitempty"`
	SpaceID         string           `json:"space_id,omitempty"`
	MaintenanceInfo *MaintenanceInfo `json:"maintenance_info,omitempty"`
}

// InstanceResponse is the body of a provision's or an update's answer (200,
// 201 or 202).
type InstanceResponse struct {
	DashboardURL string `json:"dashboard_url,omitempty"`
	// Operation is the key to poll last_operation with after a 202.
	Operation string            `json:"operation,omitempty"`
	Metadata  *InstanceMetadata `json:"metadata,omitempty"`
}

// OperationResponse is the body of a deprovision's or an unbind's answer,
// and of a bind's 202.
type OperationResponse struct {
	Operation string `json:"operation,omitempty"`
}

// GetInstanceResponse is the body of GET /v2/service_instances/:instance_id.
type GetInstanceResponse struct {
	ServiceID       string            `json:"service_id"`
	PlanID          string            `json:"plan_id"`
	DashboardURL    string            `json:"dashboard_url,omitempty"`
	Parameters      json.RawMessage   `json:"parameters,omitempty"`
	MaintenanceInfo *MaintenanceInfo  `json:"maintenance_info,omitempty"`
	Metadata        *InstanceMetadata `json:"metadata,omitempty"`
}

// InstanceMetadata is the optional metadata of an instance.
type InstanceMetadata struct {
	Labels     map[string]any `json:"labels,omitempty"`
	Attributes map[string]any `json:"attributes,omitempty"`
}
