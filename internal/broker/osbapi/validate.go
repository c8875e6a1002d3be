package osbapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

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
		problems = append(problems, identify(where, "service", s.ID, s.Name, serviceIDs, serviceNames)...)
		if len(s.Plans) == 0 {
			problems = append(problems, where+" has no plans")
		}
		planNames := map[string]bool{}
		for j, p := range s.Plans {
			pwhere := fmt.Sprintf("%s plans[%d]", where, j)
			if p.Name != "" {
				pwhere = fmt.Sprintf("%s plan %q", where, p.Name)
			}
			problems = append(problems, identify(pwhere, "plan", p.ID, p.Name, planIDs, planNames)...)
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

// identify checks that an entry (a service or a plan, at where) has an id
// and a name, neither seen before in ids and names, and records both.
func identify(where, kind, id, name string, ids, names map[string]bool) []string {
	var problems []string
	switch {
	case id == "":
		problems = append(problems, where+" has no id")
	case ids[id]:
		problems = append(problems, fmt.Sprintf("%s repeats %s id %q", where, kind, id))
	}
	ids[id] = true
	switch {
	case name == "":
		problems = append(problems, where+" has no name")
	case names[name]:
		problems = append(problems, where+" appears twice")
	}
	names[name] = true
	return problems
}
