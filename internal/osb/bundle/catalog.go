package bundle

import "encoding/json"

// CatalogService is a service offering as GET /v2/catalog shows it.
type CatalogService struct {
	Name                 string          `json:"name"`
	ID                   string          `json:"id"`
	Description          string          `json:"description"`
	Tags                 []string        `json:"tags,omitempty"`
	Bindable             bool            `json:"bindable"`
	InstancesRetrievable bool            `json:"instances_retrievable"`
	BindingsRetrievable  bool            `json:"bindings_retrievable"`
	PlanUpdateable       bool            `json:"plan_updateable"`
	Metadata             json.RawMessage `json:"metadata,omitempty"`
	Plans                []CatalogPlan   `json:"plans"`
}

// CatalogPlan is a service plan as the catalog shows it.
type CatalogPlan struct {
	ID             string          `json:"id"`
	Name           string          `json:"name"`
	Description    string          `json:"description"`
	Metadata       json.RawMessage `json:"metadata,omitempty"`
	Free           *bool           `json:"free,omitempty"`
	Bindable       *bool           `json:"bindable,omitempty"`
	PlanUpdateable bool            `json:"plan_updateable"`
	Schemas        *CatalogSchemas `json:"schemas,omitempty"`
}

// CatalogSchemas are a plan's schemas in the OSB shape.
type CatalogSchemas struct {
	ServiceInstance *InstanceSchemas `json:"service_instance,omitempty"`
	ServiceBinding  *BindingSchemas  `json:"service_binding,omitempty"`
}

// InstanceSchemas are the create and update schemas.
type InstanceSchemas struct {
	Create *InputParameters `json:"create,omitempty"`
	Update *InputParameters `json:"update,omitempty"`
}

// BindingSchemas is the bind schema.
type BindingSchemas struct {
	Create *InputParameters `json:"create,omitempty"`
}

// InputParameters wraps one JSON Schema.
type InputParameters struct {
	Parameters json.RawMessage `json:"parameters"`
}

func wrap(raw json.RawMessage) *InputParameters {
	if raw == nil {
		return nil
	}
	return &InputParameters{Parameters: raw}
}

// Catalog renders the spec's catalog entry. Both GET endpoints are always
// supported, so instances and bindings are always retrievable.
func (s *Spec) Catalog() CatalogService {
	m := s.Manifest
	out := CatalogService{
		Name: m.Name, ID: m.ID, Description: m.Description, Tags: m.Tags,
		Bindable: m.Bindable, InstancesRetrievable: true, BindingsRetrievable: true,
		Metadata: m.Metadata, Plans: []CatalogPlan{},
	}
	for _, p := range m.Plans {
		cp := CatalogPlan{ID: p.ID, Name: p.Name, Description: p.Description, Metadata: p.Metadata,
			Free: p.Free, Bindable: p.Bindable, PlanUpdateable: p.Updateable}
		if p.Updateable {
			out.PlanUpdateable = true
		}
		sc := p.Schemas
		if sc.Create != nil || sc.Update != nil || sc.Bind != nil {
			cp.Schemas = &CatalogSchemas{}
			if sc.Create != nil || sc.Update != nil {
				cp.Schemas.ServiceInstance = &InstanceSchemas{Create: wrap(sc.Create), Update: wrap(sc.Update)}
			}
			if sc.Bind != nil {
				cp.Schemas.ServiceBinding = &BindingSchemas{Create: wrap(sc.Bind)}
			}
		}
		out.Plans = append(out.Plans, cp)
	}
	return out
}
