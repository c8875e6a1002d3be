package bundle

import (
	"bytes"
	"encoding/json"

	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
)

func wrap(raw json.RawMessage) *osbapi.InputParameters {
	if raw == nil {
		return nil
	}
	return &osbapi.InputParameters{Parameters: raw}
}

// metadata decodes a manifest's metadata object for the catalog; numbers
// keep their literal form.
func metadata(raw json.RawMessage) map[string]any {
	if len(raw) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil
	}
	return m
}

// Catalog renders the spec's catalog entry. Both GET endpoints are always
// supported, so instances and bindings are always retrievable.
func (s *Spec) Catalog() osbapi.Service {
	m := s.Manifest
	out := osbapi.Service{
		Name: m.Name, ID: m.ID, Description: m.Description, Tags: m.Tags,
		Bindable: m.Bindable, InstancesRetrievable: true, BindingsRetrievable: true,
		Metadata: metadata(m.Metadata), Plans: []osbapi.Plan{},
	}
	for _, p := range m.Plans {
		cp := osbapi.Plan{ID: p.ID, Name: p.Name, Description: p.Description, Metadata: metadata(p.Metadata),
			Free: p.Free, Bindable: p.Bindable, PlanUpdateable: &p.Updateable}
		if p.Updateable {
			out.PlanUpdateable = true
		}
		sc := p.Schemas
		if sc.Create != nil || sc.Update != nil || sc.Bind != nil {
			cp.Schemas = &osbapi.Schemas{}
			if sc.Create != nil || sc.Update != nil {
				cp.Schemas.ServiceInstance = &osbapi.ServiceInstanceSchemas{Create: wrap(sc.Create), Update: wrap(sc.Update)}
			}
			if sc.Bind != nil {
				cp.Schemas.ServiceBinding = &osbapi.ServiceBindingSchemas{Create: wrap(sc.Bind)}
			}
		}
		out.Plans = append(out.Plans, cp)
	}
	return out
}
