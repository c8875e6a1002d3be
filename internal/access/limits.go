package access

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// Limit is one per-plan limit of an access rule (spec.access[].limits):
// a namespace the rule selects may hold at most Max instances of the
// plans it counts, together.
type Limit struct {
	// Rule and Name name the limit: its access rule and its own name.
	Rule, Name string
	// Max is how many instances of the plans it counts a namespace may
	// hold.
	Max int32
	// services and plans are the rule's patterns: the limit counts only
	// plans the rule opens; only, of those, the plans it names; and only
	// the plans not marked free when notFree.
	services, plans, named []string
	notFree                bool
}

// Counts reports whether an instance of plan of service counts against
// the limit; free says whether the broker's catalog marks the plan free.
func (l Limit) Counts(service, plan string, free bool) bool {
	if l.notFree && free {
		return false
	}
	return matchAny(l.services, service) && matchAny(l.plans, plan) && (len(l.named) == 0 || matchAny(l.named, plan))
}

// String names the limit as refusals and the marketplace do.
func (l Limit) String() string {
	return fmt.Sprintf("limit %q of access rule %q", l.Name, l.Rule)
}

// CountsText says which plans the limit counts, in words.
func (l Limit) CountsText() string {
	plans := quoted(l.plans)
	if len(l.named) > 0 {
		plans = quoted(l.named)
	}
	s := "plans " + plans
	if l.notFree {
		s = "plans not free among " + plans
	}
	return s + " of services " + quoted(l.services)
}

// Limits returns the per-plan limits that apply to a namespace with
// these labels: every limit of every rule that selects it. A broker
// without rules, or with rules that cannot be used, has none (its rules
// open everything, or nothing).
func (r *Rules) Limits(nsLabels map[string]string) []Limit {
	if r.Open() || r.err != nil {
		return nil
	}
	set := labels.Set(nsLabels)
	var out []Limit
	for _, ru := range r.rules {
		if !ru.selector.Matches(set) {
			continue
		}
		out = append(out, ru.compiledLimits()...)
	}
	return out
}

// HasLimits reports whether any rule sets a per-plan limit.
func (r *Rules) HasLimits() bool {
	if r.Open() || r.err != nil {
		return false
	}
	for _, ru := range r.rules {
		if len(ru.limits) > 0 {
			return true
		}
	}
	return false
}

// limitsOf are the limits that count plan of service, with the
// namespaces each applies to, for the marketplace.
func (r *Rules) limitsOf(service, plan string, free bool) []v1alpha1.PlanLimitSummary {
	if r.Open() || r.err != nil {
		return nil
	}
	var out []v1alpha1.PlanLimitSummary
	for _, ru := range r.rules {
		namespaces := "all"
		if !ru.selector.Empty() {
			namespaces = ru.selector.String()
		}
		for _, l := range ru.compiledLimits() {
			if l.Counts(service, plan, free) {
				out = append(out, v1alpha1.PlanLimitSummary{Rule: l.Rule, Name: l.Name, Namespaces: namespaces, MaxInstances: l.Max, Counts: l.CountsText()})
			}
		}
	}
	return out
}

func (ru rule) compiledLimits() []Limit {
	out := make([]Limit, 0, len(ru.limits))
	for _, l := range ru.limits {
		out = append(out, Limit{Rule: ru.name, Name: l.Name, Max: l.MaxInstances, services: ru.services, plans: ru.plans, named: l.Plans, notFree: l.NotFree})
	}
	return out
}

// LimitRefusal says why a request that would take a namespace's use of a
// limit's plans from held to held+1 is refused, for a person: the plan
// asked for, the limit, what it counts, the count and the way out.
func LimitRefusal(broker, namespace, service, plan string, l Limit, held int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "plan %q of service %q (broker %q) is limited in namespace %q: %s allows %d instance(s) of its plans (%s), and the namespace holds %d",
		plan, service, broker, namespace, l, l.Max, l.CountsText(), held)
	fmt.Fprintf(&b, "; delete one of them, or ask a cluster administrator to raise the limit (spec.access of ServiceBroker %q); "+
		"kubectl lockstep marketplace shows the namespace's limits and use", broker)
	return b.String()
}
