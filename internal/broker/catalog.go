package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Catalog is a broker's catalog: the services it offers and their plans.
type Catalog struct {
	Services []Service `json:"services"`
}

// Service is one service offering. Its dashboard_client (which holds a
// secret) is deliberately not decoded.
type Service struct {
	ID                   string         `json:"id"`
	Name                 string         `json:"name"`
	Description          string         `json:"description"`
	Tags                 []string       `json:"tags,omitempty"`
	Requires             []string       `json:"requires,omitempty"`
	Bindable             bool           `json:"bindable"`
	InstancesRetrievable bool           `json:"instances_retrievable,omitempty"`
	BindingsRetrievable  bool           `json:"bindings_retrievable,omitempty"`
	AllowContextUpdates  bool           `json:"allow_context_updates,omitempty"`
	PlanUpdateable       bool           `json:"plan_updateable,omitempty"`
	Metadata             map[string]any `json:"metadata,omitempty"`
	Plans                []Plan         `json:"plans"`
}

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

// IsFree reports whether the plan is free (OSB default: true).
func (p *Plan) IsFree() bool { return p.Free == nil || *p.Free }

// FindService returns the service named name.
func (c *Catalog) FindService(name string) (*Service, error) {
	for i := range c.Services {
		if c.Services[i].Name == name {
			return &c.Services[i], nil
		}
	}
	names := make([]string, 0, len(c.Services))
	for _, s := range c.Services {
		names = append(names, s.Name)
	}
	return nil, fmt.Errorf("service %q is not in the broker's catalog (it offers: %s)", name, listOrNone(names))
}

// FindServiceByID returns the service with OSB id id.
func (c *Catalog) FindServiceByID(id string) (*Service, bool) {
	for i := range c.Services {
		if c.Services[i].ID == id {
			return &c.Services[i], true
		}
	}
	return nil, false
}

// FindPlan returns the plan named planName of the service named service.
func (c *Catalog) FindPlan(service, planName string) (ServicePlan, error) {
	s, err := c.FindService(service)
	if err != nil {
		return ServicePlan{}, err
	}
	p, err := s.FindPlan(planName)
	if err != nil {
		return ServicePlan{}, err
	}
	return ServicePlan{Service: s, Plan: p}, nil
}

// FindPlan returns the plan named name.
func (s *Service) FindPlan(name string) (*Plan, error) {
	for i := range s.Plans {
		if s.Plans[i].Name == name {
			return &s.Plans[i], nil
		}
	}
	names := make([]string, 0, len(s.Plans))
	for _, p := range s.Plans {
		names = append(names, p.Name)
	}
	return nil, fmt.Errorf("plan %q is not offered by service %q (its plans: %s)", name, s.Name, listOrNone(names))
}

// FindPlanByID returns the plan with OSB id id.
func (s *Service) FindPlanByID(id string) (*Plan, bool) {
	for i := range s.Plans {
		if s.Plans[i].ID == id {
			return &s.Plans[i], true
		}
	}
	return nil, false
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// ServicePlan is a plan together with its service, which supplies the
// defaults the plan may override.
type ServicePlan struct {
	Service *Service
	Plan    *Plan
}

// Bindable reports whether instances of the plan can be bound: the plan's
// own bindable when set, the service's otherwise.
func (sp ServicePlan) Bindable() bool {
	if sp.Plan.Bindable != nil {
		return *sp.Plan.Bindable
	}
	return sp.Service.Bindable
}

// Updateable reports whether an instance may change to or from this plan:
// the plan's own plan_updateable when set, the service's otherwise.
func (sp ServicePlan) Updateable() bool {
	if sp.Plan.PlanUpdateable != nil {
		return *sp.Plan.PlanUpdateable
	}
	return sp.Service.PlanUpdateable
}

// CreateSchema returns the plan's provision parameters schema, or nil.
func (sp ServicePlan) CreateSchema() json.RawMessage {
	if s := sp.Plan.Schemas; s != nil && s.ServiceInstance != nil && s.ServiceInstance.Create != nil {
		return s.ServiceInstance.Create.Parameters
	}
	return nil
}

// UpdateSchema returns the plan's update parameters schema, or nil.
func (sp ServicePlan) UpdateSchema() json.RawMessage {
	if s := sp.Plan.Schemas; s != nil && s.ServiceInstance != nil && s.ServiceInstance.Update != nil {
		return s.ServiceInstance.Update.Parameters
	}
	return nil
}

// BindSchema returns the plan's bind parameters schema, or nil.
func (sp ServicePlan) BindSchema() json.RawMessage {
	if s := sp.Plan.Schemas; s != nil && s.ServiceBinding != nil && s.ServiceBinding.Create != nil {
		return s.ServiceBinding.Create.Parameters
	}
	return nil
}

// Validate checks what lockstep relies on: every service and plan has an id
// and a name, ids are unique, names are unique within their scope, and
// every schema is valid JSON. All problems are reported together.
func (c *Catalog) Validate() error {
	var problems []string
	serviceIDs, serviceNames, planIDs := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for i, s := range c.Services {
		where := fmt.Sprintf("services[%d]", i)
		if s.Name != "" {
			where = fmt.Sprintf("service %q", s.Name)
		}
		switch {
		case s.ID == "":
			problems = append(problems, where+" has no id")
		case serviceIDs[s.ID]:
			problems = append(problems, fmt.Sprintf("%s repeats service id %q", where, s.ID))
		}
		serviceIDs[s.ID] = true
		switch {
		case s.Name == "":
			problems = append(problems, where+" has no name")
		case serviceNames[s.Name]:
			problems = append(problems, where+" appears twice")
		}
		serviceNames[s.Name] = true
		if len(s.Plans) == 0 {
			problems = append(problems, where+" has no plans")
		}
		planNames := map[string]bool{}
		for j, p := range s.Plans {
			pwhere := fmt.Sprintf("%s plans[%d]", where, j)
			if p.Name != "" {
				pwhere = fmt.Sprintf("%s plan %q", where, p.Name)
			}
			switch {
			case p.ID == "":
				problems = append(problems, pwhere+" has no id")
			case planIDs[p.ID]:
				problems = append(problems, fmt.Sprintf("%s repeats plan id %q", pwhere, p.ID))
			}
			planIDs[p.ID] = true
			switch {
			case p.Name == "":
				problems = append(problems, pwhere+" has no name")
			case planNames[p.Name]:
				problems = append(problems, pwhere+" appears twice")
			}
			planNames[p.Name] = true
			sp := ServicePlan{Service: &c.Services[i], Plan: &c.Services[i].Plans[j]}
			for _, schema := range []struct {
				kind string
				raw  json.RawMessage
			}{{"create", sp.CreateSchema()}, {"update", sp.UpdateSchema()}, {"binding create", sp.BindSchema()}} {
				if len(schema.raw) > 0 && !json.Valid(schema.raw) {
					problems = append(problems, fmt.Sprintf("%s has an invalid %s schema", pwhere, schema.kind))
				}
			}
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return errors.New("invalid catalog: " + strings.Join(problems, "; "))
}

// Catalog fetches the broker's catalog (GET /v2/catalog) and validates it.
func (c *Client) Catalog(ctx context.Context, meta RequestMeta) (*Catalog, error) {
	cl := call{op: OpCatalog, method: http.MethodGet, path: "/v2/catalog"}
	a, err := c.do(ctx, meta, cl)
	if err != nil {
		return nil, err
	}
	if a.status != http.StatusOK {
		return nil, unexpected(cl, a)
	}
	var out Catalog
	if err := decode(cl, a, &out); err != nil {
		return nil, err
	}
	if out.Services == nil {
		return nil, malformed(cl, a, `no "services" list`, nil)
	}
	if err := out.Validate(); err != nil {
		return nil, malformed(cl, a, err.Error(), err)
	}
	return &out, nil
}
