package servicebroker

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
	"github.com/lockstep-dev/lockstep/internal/catalog"
	"github.com/lockstep-dev/lockstep/internal/marketplace"
)

// namedPlans is how many unusable plans the condition names.
const namedPlans = 5

// schemasCondition is the broker's SchemasUsable condition: False when some
// plan of its catalog has a schema lockstep cannot use, naming the plans
// (each plan's ServicePlan has the details).
func schemasCondition(e *catalog.Entry, generation int64) metav1.Condition {
	var names []string
	reason := ""
	for i := range e.Catalog.Services {
		s := &e.Catalog.Services[i]
		for j := range s.Plans {
			sp := osbapi.ServicePlan{Service: s, Plan: &s.Plans[j]}
			_, compileErr := e.PlanSchemas(sp.Plan.ID)
			problems := marketplace.Problems(sp, compileErr)
			if len(problems) == 0 {
				continue
			}
			if reason == "" {
				reason = problems[0].Reason
			}
			names = append(names, fmt.Sprintf("%s/%s (%s)", s.Name, sp.Plan.Name, problems[0].Reason))
		}
	}
	cond := metav1.Condition{Type: v1alpha1.ConditionSchemasUsable, ObservedGeneration: generation}
	if len(names) == 0 {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, marketplace.ReasonUsable, "every plan's parameter schemas are usable"
		return cond
	}
	shown := names
	if len(shown) > namedPlans {
		shown = append(shown[:namedPlans:namedPlans], fmt.Sprintf("and %d more", len(names)-namedPlans))
	}
	cond.Status, cond.Reason = metav1.ConditionFalse, reason
	cond.Message = fmt.Sprintf("%d plans have a parameter schema lockstep cannot use: %s; the plan's ServicePlan (kubectl describe serviceplans --field-selector spec.brokerName=%s) says why",
		len(names), strings.Join(shown, ", "), e.Broker)
	return cond
}
