package lifecycle

import (
	"bytes"
	"encoding/json"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded/store"
	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
)

// Common are the request properties every mutating operation has.
type Common struct {
	AcceptsIncomplete bool
	// Identity is the originating identity, recorded on the job.
	Identity *store.Identity
	// RequestID is the request identity, recorded on the job.
	RequestID string
}

// ProvisionRequest is PUT /v2/service_instances/:id: the path's instance
// id and the body.
type ProvisionRequest struct {
	Common
	InstanceID string
	osbapi.ProvisionRequest
}

// UpdateRequest is PATCH /v2/service_instances/:id. In the body, an empty
// plan_id keeps the plan and absent parameters keep the parameters.
type UpdateRequest struct {
	Common
	InstanceID string
	osbapi.UpdateRequest
}

// DeprovisionRequest is DELETE /v2/service_instances/:id.
type DeprovisionRequest struct {
	Common
	InstanceID string
	ServiceID  string
	PlanID     string
}

// BindRequest is PUT .../service_bindings/:bid: the path's ids and the
// body.
type BindRequest struct {
	Common
	InstanceID string
	BindingID  string
	osbapi.BindRequest
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
	Credentials map[string]any
}

// credentialsOf decodes stored credentials (a JSON object, checked when
// the action wrote them) for an answer: an empty object when there are
// none; numbers keep their literal form.
func credentialsOf(raw json.RawMessage) map[string]any {
	creds := map[string]any{}
	if len(raw) == 0 {
		return creds
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	_ = dec.Decode(&creds)
	return creds
}
