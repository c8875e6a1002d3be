package bundle

import (
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Spec is a bundle ready to serve: manifest validated, schemas compiled.
type Spec struct {
	Bundle
	plans map[string]*compiledPlan
}

type compiledPlan struct {
	plan    Plan
	schemas map[SchemaKind]*jsonschema.Schema
}

// NewSpec validates a bundle and compiles its schemas.
func NewSpec(b *Bundle) (*Spec, error) {
	if err := b.Manifest.Validate(); err != nil {
		return nil, err
	}
	s := &Spec{Bundle: *b, plans: map[string]*compiledPlan{}}
	for _, p := range b.Manifest.Plans {
		cp := &compiledPlan{plan: p, schemas: map[SchemaKind]*jsonschema.Schema{}}
		for kind, raw := range p.Schemas.all() {
			sch, err := compileSchema(p.ID, kind, raw)
			if err != nil {
				return nil, fmt.Errorf("bundle %q plan %q: %s schema: %w", b.Manifest.Name, p.Name, kind, err)
			}
			cp.schemas[kind] = sch
		}
		s.plans[p.ID] = cp
	}
	return s, nil
}

// ServiceID is the OSB service_id of the spec.
func (s *Spec) ServiceID() string { return s.Manifest.ID }

// Name is the service offering's name.
func (s *Spec) Name() string { return s.Manifest.Name }

// Plan returns the plan with the given id.
func (s *Spec) Plan(id string) (Plan, bool) {
	cp, ok := s.plans[id]
	if !ok {
		return Plan{}, false
	}
	return cp.plan, true
}

// PlanIDs lists the plan ids, sorted.
func (s *Spec) PlanIDs() []string {
	ids := make([]string, 0, len(s.plans))
	for id := range s.plans {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// Bindable reports whether instances of the plan can be bound; for a plan
// the bundle no longer has (its instances live on), the service decides.
func (s *Spec) Bindable(planID string) bool {
	p, ok := s.Plan(planID)
	if ok && p.Bindable != nil {
		return *p.Bindable
	}
	return s.Manifest.Bindable
}

// Asynchronous reports whether the plan's actions need accepts_incomplete.
func (s *Spec) Asynchronous(planID string) bool {
	p, ok := s.Plan(planID)
	if ok && p.Asynchronous != nil {
		return *p.Asynchronous
	}
	return s.Manifest.Asynchronous
}

// Timeout is the bundle's action timeout, zero when it sets none.
func (s *Spec) Timeout() time.Duration { return time.Duration(s.Manifest.Timeout) }

// Program returns the program of an action.
func (s *Spec) Program(a Action) string {
	if p, ok := s.Actions[a]; ok {
		return p
	}
	return Noop
}

// ValidateParameters checks parameters against one of the plan's schemas;
// a plan without that schema accepts any JSON object. The error is a
// *ParametersError when the parameters are at fault.
func (s *Spec) ValidateParameters(planID string, kind SchemaKind, params json.RawMessage) error {
	cp, ok := s.plans[planID]
	if !ok {
		return fmt.Errorf("plan %q is not a plan of service %q", planID, s.Manifest.Name)
	}
	return validate(cp.schemas[kind], cp.plan.Name, kind, params)
}

// CreateOnly lists the top-level properties of the plan's create schema
// that its update schema lacks: they are set at creation and never change.
// A plan without an update schema has none.
func (s *Spec) CreateOnly(planID string) []string {
	cp, ok := s.plans[planID]
	if !ok || cp.plan.Schemas.Update == nil {
		return nil
	}
	update := topLevelProperties(cp.plan.Schemas.Update)
	var out []string
	for p := range topLevelProperties(cp.plan.Schemas.Create) {
		if !update[p] {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}
