package catalog

import (
	"fmt"
	"time"

	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
	"github.com/lockstep-dev/lockstep/internal/broker/osbclient"
	"github.com/lockstep-dev/lockstep/internal/validate/schema"
)

// Entry is one broker's catalog as admission sees it. An Entry is never
// changed after it is stored; a new fetch stores a new Entry.
type Entry struct {
	// Broker is the ServiceBroker's name.
	Broker string
	// Client talks to the broker.
	Client *osbclient.Client
	// Catalog is the catalog as the broker last served it.
	Catalog *osbapi.Catalog
	// Removed are plans that left the catalog while instances still use
	// them, from earlier catalogs.
	Removed []osbapi.ServicePlan
	// FetchedAt is when the catalog was fetched.
	FetchedAt time.Time

	schemas      map[string]*schema.PlanSchemas // by plan id
	schemaErrors map[string]error               // by plan id
	// plans indexes the catalog's plans by service and plan name, so that
	// finding one costs the same in a catalog of 10 plans or 1,000.
	plans map[planKey]osbapi.ServicePlan
}

// planKey is a plan's name and its service's.
type planKey struct{ service, plan string }

// Plan is a plan found in an Entry.
type Plan struct {
	osbapi.ServicePlan
	// Removed is true when the plan left the broker's catalog: it takes no
	// new provisions.
	Removed bool
	// Schemas are the plan's compiled parameter schemas (nil when the
	// broker's schema did not compile; see SchemaError).
	Schemas *schema.PlanSchemas
	// SchemaError says why the broker's schemas for the plan are unusable.
	SchemaError error
}

// NewEntry compiles the parameter schemas of every plan of cat once.
func NewEntry(name string, client *osbclient.Client, cat *osbapi.Catalog, removed []osbapi.ServicePlan, fetchedAt time.Time) *Entry {
	e := &Entry{
		Broker: name, Client: client, Catalog: cat, Removed: removed, FetchedAt: fetchedAt,
		schemas: map[string]*schema.PlanSchemas{}, schemaErrors: map[string]error{},
		plans: map[planKey]osbapi.ServicePlan{},
	}
	compile := func(sp osbapi.ServicePlan) {
		s, err := schema.Compile(sp.CreateSchema(), sp.UpdateSchema(), sp.BindSchema())
		if err != nil {
			e.schemaErrors[sp.Plan.ID] = fmt.Errorf("broker %q publishes an unusable parameter schema for plan %q of service %q: %w",
				name, sp.Plan.Name, sp.Service.Name, err)
			return
		}
		e.schemas[sp.Plan.ID] = s
	}
	indexed := map[string]bool{} // services by name: the first of a name wins, as in Catalog.FindPlan
	for i := range cat.Services {
		s := &cat.Services[i]
		first := !indexed[s.Name]
		indexed[s.Name] = true
		for j := range s.Plans {
			sp := osbapi.ServicePlan{Service: s, Plan: &s.Plans[j]}
			compile(sp)
			key := planKey{s.Name, s.Plans[j].Name}
			if _, dup := e.plans[key]; first && !dup {
				e.plans[key] = sp
			}
		}
	}
	for _, sp := range removed {
		compile(sp)
	}
	return e
}

// Find returns the plan planName of service serviceName: from the current
// catalog, or else from the removed plans. The error says what the catalog
// offers instead.
func (e *Entry) Find(serviceName, planName string) (Plan, error) {
	sp, ok := e.plans[planKey{serviceName, planName}]
	removed := false
	if !ok {
		// Not in the catalog: the removed plans, or the error that says
		// what the catalog offers.
		var err error
		sp, err = e.Catalog.FindPlan(serviceName, planName)
		found := false
		for _, r := range e.Removed {
			if r.Service.Name == serviceName && r.Plan.Name == planName {
				sp, removed, found = r, true, true
				break
			}
		}
		if !found {
			return Plan{}, err
		}
	}
	return Plan{
		ServicePlan: sp,
		Removed:     removed,
		Schemas:     e.schemas[sp.Plan.ID],
		SchemaError: e.schemaErrors[sp.Plan.ID],
	}, nil
}

// Knows reports whether the catalog (or its removed plans) has the plan.
func (e *Entry) Knows(serviceName, planName string) bool {
	_, err := e.Find(serviceName, planName)
	return err == nil
}

// HasService reports whether the catalog (or its removed plans) has a
// service of that name.
func (e *Entry) HasService(name string) bool {
	if _, err := e.Catalog.FindService(name); err == nil {
		return true
	}
	for _, r := range e.Removed {
		if r.Service.Name == name {
			return true
		}
	}
	return false
}

// PlanByID is the plan with this OSB id: from the current catalog, or
// else from the removed plans.
func (e *Entry) PlanByID(id string) (osbapi.ServicePlan, bool) {
	for i := range e.Catalog.Services {
		s := &e.Catalog.Services[i]
		for j := range s.Plans {
			if s.Plans[j].ID == id {
				return osbapi.ServicePlan{Service: s, Plan: &s.Plans[j]}, true
			}
		}
	}
	for _, r := range e.Removed {
		if r.Plan.ID == id {
			return r, true
		}
	}
	return osbapi.ServicePlan{}, false
}

// PlanName is the name of the plan with this OSB id, or the id itself when
// the catalog has no such plan.
func (e *Entry) PlanName(id string) string {
	for _, s := range e.Catalog.Services {
		for _, p := range s.Plans {
			if p.ID == id {
				return p.Name
			}
		}
	}
	return id
}

// PlanSchemas returns the compiled schemas of the plan with this OSB id
// (current or removed), or why the broker's schemas for it are unusable.
func (e *Entry) PlanSchemas(planID string) (*schema.PlanSchemas, error) {
	return e.schemas[planID], e.schemaErrors[planID]
}
