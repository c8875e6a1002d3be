package fakebroker

import (
	"encoding/json"

	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
)

// Names and ids of the default catalog.
const (
	// ServiceDB is a bindable service whose plans may change into each other.
	ServiceDB   = "db"
	ServiceDBID = "db-service-id"
	// PlanSmall and PlanLarge are plans of "db" with create and update
	// schemas; "region" is create-only (in the create schema, not in the
	// update schema).
	PlanSmall   = "small"
	PlanSmallID = "db-small-plan-id"
	PlanLarge   = "large"
	PlanLargeID = "db-large-plan-id"
	// PlanFixed is a plan of "db" that overrides the service: not
	// updateable and not bindable.
	PlanFixed   = "fixed"
	PlanFixedID = "db-fixed-plan-id"

	// ServiceQueue is a service that is not bindable and whose plans cannot
	// change.
	ServiceQueue   = "queue"
	ServiceQueueID = "queue-service-id"
	// PlanStandard is a plan of "queue" without schemas.
	PlanStandard   = "standard"
	PlanStandardID = "queue-standard-plan-id"
	// PlanShared is a plan of "queue" that overrides the service: bindable.
	PlanShared   = "shared"
	PlanSharedID = "queue-shared-plan-id"
)

// dbCreateSchema allows storageGB, version and the create-only region.
const dbCreateSchema = `{
  "$schema": "http://json-schema.org/draft-04/schema#",
  "type": "object",
  "properties": {
    "storageGB": {"type": "integer", "minimum": 1, "maximum": 1024},
    "version":   {"type": "string", "enum": ["15", "16", "17"]},
    "region":    {"type": "string"}
  },
  "additionalProperties": false
}`

// dbUpdateSchema is dbCreateSchema without region.
const dbUpdateSchema = `{
  "$schema": "http://json-schema.org/draft-04/schema#",
  "type": "object",
  "properties": {
    "storageGB": {"type": "integer", "minimum": 1, "maximum": 1024},
    "version":   {"type": "string", "enum": ["15", "16", "17"]}
  },
  "additionalProperties": false
}`

// dbBindSchema allows choosing a role for the binding.
const dbBindSchema = `{
  "$schema": "http://json-schema.org/draft-04/schema#",
  "type": "object",
  "properties": {"role": {"type": "string", "enum": ["reader", "writer"]}},
  "additionalProperties": false
}`

// DefaultCatalog returns the catalog a new Broker serves: service "db"
// (bindable, plan_updateable) with plans "small" and "large" (schemas with
// create-only "region") and "fixed" (not updateable, not bindable), and
// service "queue" (not bindable) with plans "standard" and "shared"
// (bindable by override).
func DefaultCatalog() osbapi.Catalog {
	no, yes := false, true
	dbSchemas := func() *osbapi.Schemas {
		return &osbapi.Schemas{
			ServiceInstance: &osbapi.ServiceInstanceSchemas{
				Create: &osbapi.InputParameters{Parameters: json.RawMessage(dbCreateSchema)},
				Update: &osbapi.InputParameters{Parameters: json.RawMessage(dbUpdateSchema)},
			},
			ServiceBinding: &osbapi.ServiceBindingSchemas{
				Create: &osbapi.InputParameters{Parameters: json.RawMessage(dbBindSchema)},
			},
		}
	}
	return osbapi.Catalog{Services: []osbapi.Service{
		{
			ID: ServiceDBID, Name: ServiceDB, Description: "A database",
			Bindable: true, PlanUpdateable: true, InstancesRetrievable: true, BindingsRetrievable: true,
			Tags: []string{"sql"},
			Plans: []osbapi.Plan{
				{ID: PlanSmallID, Name: PlanSmall, Description: "1 vCPU", Schemas: dbSchemas(),
					MaintenanceInfo: &osbapi.MaintenanceInfo{Version: "1.0.0"}},
				{ID: PlanLargeID, Name: PlanLarge, Description: "4 vCPU", Free: &no, Schemas: dbSchemas(),
					MaintenanceInfo: &osbapi.MaintenanceInfo{Version: "1.0.0"}},
				{ID: PlanFixedID, Name: PlanFixed, Description: "cannot change plan, cannot bind",
					PlanUpdateable: &no, Bindable: &no},
			},
		},
		{
			ID: ServiceQueueID, Name: ServiceQueue, Description: "A message queue",
			Bindable: false, PlanUpdateable: false, InstancesRetrievable: true,
			Plans: []osbapi.Plan{
				{ID: PlanStandardID, Name: PlanStandard, Description: "not bindable"},
				{ID: PlanSharedID, Name: PlanShared, Description: "bindable by override", Bindable: &yes},
			},
		},
	}}
}

// findByIDs returns the service and plan with the given ids.
func findByIDs(c *osbapi.Catalog, serviceID, planID string) (osbapi.ServicePlan, bool) {
	s, ok := c.FindServiceByID(serviceID)
	if !ok {
		return osbapi.ServicePlan{}, false
	}
	p, ok := s.FindPlanByID(planID)
	if !ok {
		return osbapi.ServicePlan{}, false
	}
	return osbapi.ServicePlan{Service: s, Plan: p}, true
}

// cloneCatalog deep-copies c through JSON, so that callers cannot change
// what the broker serves behind its lock.
func cloneCatalog(c osbapi.Catalog) (osbapi.Catalog, error) {
	raw, err := json.Marshal(c)
	if err != nil {
		return osbapi.Catalog{}, err
	}
	var out osbapi.Catalog
	err = json.Unmarshal(raw, &out)
	return out, err
}
