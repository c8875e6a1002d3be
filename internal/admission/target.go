package admission

import (
	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/catalog"
	"github.com/lockstep-dev/lockstep/internal/parametersfrom"
)

// Target is what a request names, as the chain's Resolver found it: the
// broker and plan, the bound instance, the parameters with those from
// Secrets merged in. The checks and steps after the Resolver read it and
// never change it.
type Target struct {
	// Entry is the broker's catalog; nil when the broker or the plan
	// could not be found (the Resolver reported why).
	Entry *catalog.Entry
	// Plan is the plan asked for (on DELETE: the instance's plan).
	Plan catalog.Plan
	// OldPlan is the persisted plan on UPDATE; nil when the catalog no
	// longer knows it.
	OldPlan *catalog.Plan
	// Instance is the bound instance, for bindings.
	Instance *v1alpha1.ServiceInstance
	// Params are the new object's parameters with the Secrets of
	// spec.parametersFrom merged in, OldParams the persisted object's (on
	// UPDATE); nil when a reference could not be resolved, and on DELETE.
	Params, OldParams *parametersfrom.Resolved
}

// found reports whether the broker and plan were found.
func (t *Target) found() bool { return t.Entry != nil }

// previousPlanID is the id of the persisted plan on an UPDATE that changes
// the plan, and "" otherwise.
func (t *Target) previousPlanID() string {
	if t.OldPlan == nil || t.OldPlan.Plan.ID == t.Plan.Plan.ID {
		return ""
	}
	return t.OldPlan.Plan.ID
}
