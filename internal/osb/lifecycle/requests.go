package lifecycle

import (
	"encoding/json"

	"github.com/lockstep-dev/lockstep/internal/osb/store"
)

// Common are the request properties every mutating operation has.
type Common struct {
	AcceptsIncomplete bool
	// Identity is the originating identity, recorded on the job.
	Identity *store.Identity
	// RequestID is the request identity, recorded on the job.
	RequestID string
}

// ProvisionRequest is PUT /v2/service_instances/:id.
type ProvisionRequest struct {
	Common
	InstanceID       string
	ServiceID        string
	PlanID           string
	Parameters       json.RawMessage
	Context          json.RawMessage
	OrganizationGUID string
	SpaceGUID        string
}

// UpdateRequest is PATCH /v2/service_instances/:id.
type UpdateRequest struct {
	Common
	InstanceID string
	ServiceID  string
	// PlanID empty keeps the plan.
	PlanID string
	// Parameters nil keeps the parameters.
	Parameters json.RawMessage
	Context    json.RawMessage
}

// DeprovisionRequest is DELETE /v2/service_instances/:id.
type DeprovisionRequest struct {
	Common
	InstanceID string
	ServiceID  string
	PlanID     string
}

// BindRequest is PUT .../service_bindings/:bid.
type BindRequest struct {
	Common
	InstanceID   string
	BindingID    string
	ServiceID    string
	PlanID       string
	Parameters   json.RawMessage
	BindResource json.RawMessage
	Context      json.RawMessage
	AppGUID      string
}

// UnbindRequest is DELETE .../service_bindings/:bid.
type UnbindRequest struct {
	Common
	InstanceID string
	BindingID  string
	ServiceID  string
	PlanID     string
}

// LastOperationRequest is GET .../last_operation; BindingID is empty for an
// instance.
type LastOperationRequest struct {
	InstanceID string
	BindingID  string
	Operation  string
}

// Status is the success status of an answer.
type Status int

// Success statuses.
const (
	OK       Status = 200
	Created  Status = 201
	Accepted Status = 202
)

// Result answers a mutating operation.
type Result struct {
	Status Status
	// Operation is set on 202.
	Operation    string
	DashboardURL string
	// Credentials answer a synchronous or repeated bind. Never log them.
	Credentials json.RawMessage
}

// InstanceView answers GET of an instance.
type InstanceView struct {
	ServiceID    string          `json:"service_id"`
	PlanID       string          `json:"plan_id"`
	DashboardURL string          `json:"dashboard_url,omitempty"`
	Parameters   json.RawMessage `json:"parameters,omitempty"`
}

// BindingView answers GET of a binding. Never log it.
type BindingView struct {
	Credentials json.RawMessage `json:"credentials"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// LastOperation answers last_operation.
type LastOperation struct {
	// State is "in progress", "succeeded" or "failed".
	State       string `json:"state"`
	Description string `json:"description,omitempty"`
	// InstanceUsable says, after a failed update or deprovision, that the
	// instance is still there and usable.
	InstanceUsable *bool `json:"instance_usable,omitempty"`
	// UpdateRepeatable says a failed update may be sent again.
	UpdateRepeatable *bool `json:"update_repeatable,omitempty"`
}
