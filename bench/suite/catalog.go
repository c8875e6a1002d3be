package suite

import (
	"encoding/json"
	"fmt"

	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
)

// The plan every catalog-size request names: the last plan of the last
// service, the worst place for anything that scans the catalog.
const (
	targetService = "target-service"
	targetPlan    = "target-plan"
)

// planCreateSchema and planUpdateSchema are a typical plan's parameter
// schemas: scalars, an enum, a pattern, an array, a nested object, and a
// create-only region (in create, not in update).
const (
	planCreateSchema = `{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "type": "object", "required": ["version"], "additionalProperties": false,
  "properties": {
    "region":    {"type": "string", "enum": ["eu", "us", "ap"]},
    "version":   {"type": "string", "pattern": "^[0-9]+$"},
    "storageGB": {"type": "integer", "minimum": 1, "maximum": 1024},
    "replicas":  {"type": "integer", "minimum": 1, "maximum": 9},
    "highAvailability": {"type": "boolean"},
    "tags":      {"type": "array", "items": {"type": "string", "maxLength": 63}, "maxItems": 16},
    "backup": {"type": "object", "additionalProperties": false, "properties": {
      "enabled": {"type": "boolean"}, "schedule": {"type": "string", "minLength": 1}, "retention": {"type": "integer", "minimum": 1}}}
  }
}`
	planUpdateSchema = `{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "type": "object", "additionalProperties": false,
  "properties": {
    "version":   {"type": "string", "pattern": "^[0-9]+$"},
    "storageGB": {"type": "integer", "minimum": 1, "maximum": 1024},
    "replicas":  {"type": "integer", "minimum": 1, "maximum": 9},
    "highAvailability": {"type": "boolean"},
    "tags":      {"type": "array", "items": {"type": "string", "maxLength": 63}, "maxItems": 16},
    "backup": {"type": "object", "additionalProperties": false, "properties": {
      "enabled": {"type": "boolean"}, "schedule": {"type": "string", "minLength": 1}, "retention": {"type": "integer", "minimum": 1}}}
  }
}`
	// typicalParameters are valid against planCreateSchema.
	typicalParameters = `{"region":"eu","version":"16","storageGB":100,"replicas":3,"highAvailability":true,"tags":["team-a","prod"],"backup":{"enabled":true,"schedule":"0 3 * * *","retention":7}}`
)

// plansPerService is how many plans each service of the scale
// benchmark's catalogs has.
const plansPerService = 10

// generatedCatalog returns a catalog of plans plans, every one with the
// typical schemas, in services of perService plans; the last plan of the
// last service is targetService/targetPlan.
func generatedCatalog(plans, perService int) osbapi.Catalog {
	yes := true
	var c osbapi.Catalog
	services := (plans + perService - 1) / perService
	left := plans
	for s := range services {
		name := fmt.Sprintf("service-%d", s)
		if s == services-1 {
			name = targetService
		}
		svc := osbapi.Service{ID: fmt.Sprintf("%s-id", name), Name: name, Description: "generated", Bindable: true, PlanUpdateable: yes}
		count := min(perService, left)
		left -= count
		for p := range count {
			planName := fmt.Sprintf("plan-%d", p)
			if s == services-1 && p == count-1 {
				planName = targetPlan
			}
			svc.Plans = append(svc.Plans, osbapi.Plan{
				ID: fmt.Sprintf("%s-%s-id", name, planName), Name: planName, Description: "generated",
				Schemas: &osbapi.Schemas{ServiceInstance: &osbapi.ServiceInstanceSchemas{
					Create: &osbapi.InputParameters{Parameters: json.RawMessage(planCreateSchema)},
					Update: &osbapi.InputParameters{Parameters: json.RawMessage(planUpdateSchema)},
				}},
			})
		}
		c.Services = append(c.Services, svc)
	}
	return c
}
