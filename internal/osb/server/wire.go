package server

import "encoding/json"

// The OSB request bodies, as much of them as the broker uses. Unknown fields
// are ignored, as the specification requires.

type maintenanceInfo struct {
	Version string `json:"version"`
}

type provisionBody struct {
	ServiceID        string           `json:"service_id"`
	PlanID           string           `json:"plan_id"`
	Context          json.RawMessage  `json:"context"`
	OrganizationGUID string           `json:"organization_guid"`
	SpaceGUID        string           `json:"space_guid"`
	Parameters       json.RawMessage  `json:"parameters"`
	MaintenanceInfo  *maintenanceInfo `json:"maintenance_info"`
}

type updateBody struct {
	ServiceID       string           `json:"service_id"`
	PlanID          string           `json:"plan_id"`
	Context         json.RawMessage  `json:"context"`
	Parameters      json.RawMessage  `json:"parameters"`
	MaintenanceInfo *maintenanceInfo `json:"maintenance_info"`
}

type bindBody struct {
	ServiceID    string          `json:"service_id"`
	PlanID       string          `json:"plan_id"`
	AppGUID      string          `json:"app_guid"`
	BindResource json.RawMessage `json:"bind_resource"`
	Context      json.RawMessage `json:"context"`
	Parameters   json.RawMessage `json:"parameters"`
}

// The answers.

type errorBody struct {
	Error       string `json:"error,omitempty"`
	Description string `json:"description,omitempty"`
}

type instanceAnswer struct {
	DashboardURL string `json:"dashboard_url,omitempty"`
	Operation    string `json:"operation,omitempty"`
}

type bindingAnswer struct {
	Credentials json.RawMessage `json:"credentials,omitempty"`
	Operation   string          `json:"operation,omitempty"`
}

type catalogAnswer struct {
	Services any `json:"services"`
}
