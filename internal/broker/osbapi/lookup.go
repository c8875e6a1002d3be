package osbapi

import (
	"encoding/json"
	"fmt"
	"strings"
)

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
