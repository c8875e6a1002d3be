package osbapi

import (
	"encoding/json"
	"fmt"
)

// Catalog is the body of GET /v2/catalog: the services a broker offers and
// their plans.
type Catalog struct {
	Services []Service `json:"services"`
}

// Service is one service offering.
type Service struct {
	ID                   string   `json:"id"`
	Name                 string   `json:"name"`
	Description          string   `json:"description"`
	Tags                 []string `json:"tags,omitempty"`
	Requires             []string `json:"requires,omitempty"`
	Bindable             bool     `json:"bindable"`
	InstancesRetrievable bool     `json:"instances_retrievable,omitempty"`
	BindingsRetrievable  bool     `json:"bindings_retrievable,omitempty"`
	AllowContextUpdates  bool     `json:"allow_context_updates,omitempty"`
	PlanUpdateable       bool     `json:"plan_updateable,omitempty"`
	// DashboardClient holds a secret: a platform that does not act as the
	// dashboard's OAuth client has no use for it.
	DashboardClient *DashboardClient `json:"dashboard_client,omitempty"`
	Metadata        map[string]any   `json:"metadata,omitempty"`
	Plans           []Plan           `json:"plans"`
}

// DashboardClient is the OAuth client of a service's dashboard. Its String
// and GoString never show the secret.
type DashboardClient struct {
	ID          string `json:"id"`
	Secret      string `json:"secret"`
	RedirectURI string `json:"redirect_uri,omitempty"`
}

// String describes the client without its secret.
func (d DashboardClient) String() string {
	return fmt.Sprintf("dashboard client %q (secret hidden), redirect %q", d.ID, d.RedirectURI)
}

// GoString is String, so that %#v does not print the secret either.
func (d DashboardClient) GoString() string { return d.String() }

// Plan is one plan of a service. Bindable and PlanUpdateable, when set,
// override the service's values.
type Plan struct {
	ID                     string           `json:"id"`
	Name                   string           `json:"name"`
	Description            string           `json:"description"`
	Metadata               map[string]any   `json:"metadata,omitempty"`
	Free                   *bool            `json:"free,omitempty"`
	Bindable               *bool            `json:"bindable,omitempty"`
	PlanUpdateable         *bool            `json:"plan_updateable,omitempty"`
	Schemas                *Schemas         `json:"schemas,omitempty"`
	MaximumPollingDuration *int             `json:"maximum_polling_duration,omitempty"`
	MaintenanceInfo        *MaintenanceInfo `json:"maintenance_info,omitempty"`
}

// IsFree reports whether the plan is free (the default: true).
func (p *Plan) IsFree() bool { return p.Free == nil || *p.Free }

// Schemas are a plan's JSON Schemas for user parameters.
type Schemas struct {
	ServiceInstance *ServiceInstanceSchemas `json:"service_instance,omitempty"`
	ServiceBinding  *ServiceBindingSchemas  `json:"service_binding,omitempty"`
}

// ServiceInstanceSchemas are the schemas for provision and update parameters.
type ServiceInstanceSchemas struct {
	Create *InputParameters `json:"create,omitempty"`
	Update *InputParameters `json:"update,omitempty"`
}

// ServiceBindingSchemas is the schema for bind parameters.
type ServiceBindingSchemas struct {
	Create *InputParameters `json:"create,omitempty"`
}

// InputParameters holds one JSON Schema, kept raw for a schema validator.
type InputParameters struct {
	Parameters json.RawMessage `json:"parameters,omitempty"`
}

// MaintenanceInfo is a plan's or an instance's maintenance version.
type MaintenanceInfo struct {
	Version     string `json:"version"`
	Description string `json:"description,omitempty"`
}
