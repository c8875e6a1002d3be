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
