package access

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// Rules are one broker's access rules, compiled. A nil *Rules, like a
// broker without rules, opens every plan to every namespace.
type Rules struct {
	broker string
	rules  []rule
	// err says why the rules cannot be used: then no namespace may use
	// any plan of the broker until an administrator fixes them.
	err error
}

type rule struct {
	name     string
	selector labels.Selector
	// selects is the selector as a person reads it: "every namespace", or
	// the selector's own words.
	selects         string
	services, plans []string
	limits          []v1alpha1.PlanLimit
}

// Compile compiles a broker's access rules. Rules that cannot be used (a
// label selector that does not parse) make Rules that refuse every use,
// with the reason: an administrator who meant to restrict never gets an
// open broker by a typo.
func Compile(broker string, spec []v1alpha1.AccessRule) *Rules {
	r := &Rules{broker: broker}
	for _, s := range spec {
		sel, err := metav1.LabelSelectorAsSelector(&s.NamespaceSelector)
		if err != nil {
			r.err = fmt.Errorf("access rule %q: namespaceSelector: %w", s.Name, err)
			return r
		}
		selects := "every namespace"
		if !sel.Empty() {
			selects = "namespaces matching " + sel.String()
		}
		r.rules = append(r.rules, rule{name: s.Name, selector: sel, selects: selects, services: s.Services, plans: s.Plans, limits: s.Limits})
	}
	return r
}

// Open reports whether every namespace may use every plan (no rules):
// then there is nothing to decide, and no namespace's labels to read.
func (r *Rules) Open() bool {
	return r == nil || (len(r.rules) == 0 && r.err == nil)
}

// Err is why the rules cannot be used; nil when they can.
func (r *Rules) Err() error {
	if r == nil {
		return nil
	}
	return r.err
}

// Decision is whether a namespace may use a plan.
type Decision struct {
	// Allowed is true when it may.
	Allowed bool
	// Why says, when it may not, which rules refused it and what they
	// open instead.
	Why string
}

// Decide says whether namespace, with its labels, may use plan of service.
func (r *Rules) Decide(namespace string, nsLabels map[string]string, service, plan string) Decision {
	if r.Open() {
		return Decision{Allowed: true}
	}
	what := fmt.Sprintf("plan %q of service %q (broker %q)", plan, service, r.broker)
	if r.err != nil {
		return Decision{Why: fmt.Sprintf("%s is open to no namespace: the access rules of ServiceBroker %q cannot be used (%v); a cluster administrator must fix them",
			what, r.broker, r.err)}
	}
	set := labels.Set(nsLabels)
	var reasons []string
	for _, ru := range r.rules {
		selected, opens := ru.selector.Matches(set), ru.opens(service, plan)
		switch {
		case selected && opens:
			return Decision{Allowed: true}
		case selected:
			reasons = append(reasons, fmt.Sprintf("access rule %q selects it but opens only %s", ru.name, ru.openText()))
		case opens:
			reasons = append(reasons, fmt.Sprintf("access rule %q opens the plan only to %s", ru.name, ru.selects))
		}
	}
	if len(reasons) == 0 {
		reasons = append(reasons, fmt.Sprintf("no access rule selects this namespace or opens the plan (rules: %s)", r.names()))
	}
	return Decision{Why: fmt.Sprintf("%s is not open to namespace %q: %s; ask a cluster administrator to open it "+
		"(spec.access of ServiceBroker %q), or use a plan this namespace may use (kubectl get serviceplans shows each plan's access)",
		what, namespace, strings.Join(reasons, "; "), r.broker)}
}

// Of says which namespaces may use plan of service, and which per-plan
// limits count its instances (free says whether the catalog marks the
// plan free), for the marketplace.
func (r *Rules) Of(service, plan string, free bool) v1alpha1.PlanAccess {
	if r.Open() {
		return v1alpha1.PlanAccess{Namespaces: "all"}
	}
	if r.err != nil {
		return v1alpha1.PlanAccess{Namespaces: "none"}
	}
	var out v1alpha1.PlanAccess
	var selectors []string
	all := false
	for _, ru := range r.rules {
		if !ru.opens(service, plan) {
			continue
		}
		out.Rules = append(out.Rules, ru.name)
		if ru.selector.Empty() {
			all = true
		}
		selectors = append(selectors, ru.selector.String())
	}
	out.Limits = r.limitsOf(service, plan, free)
	switch {
	case all:
		out.Namespaces = "all"
	case len(selectors) == 0:
		out.Namespaces = "none"
	default:
		out.Namespaces = strings.Join(selectors, " or ")
	}
	return out
}

// opens reports whether the rule opens plan of service.
func (ru rule) opens(service, plan string) bool {
	return matchAny(ru.services, service) && matchAny(ru.plans, plan)
}

// openText is what the rule opens, as a person reads it.
func (ru rule) openText() string {
	return fmt.Sprintf("plans %s of services %s", quoted(ru.plans), quoted(ru.services))
}

func (r *Rules) names() string {
	names := make([]string, len(r.rules))
	for i, ru := range r.rules {
		names[i] = fmt.Sprintf("%q", ru.name)
	}
	return strings.Join(names, ", ")
}

func quoted(patterns []string) string {
	q := make([]string, len(patterns))
	for i, p := range patterns {
		q[i] = fmt.Sprintf("%q", p)
	}
	return strings.Join(q, ", ")
}

func matchAny(patterns []string, name string) bool {
	for _, p := range patterns {
		if Match(p, name) {
			return true
		}
	}
	return false
}

// Match reports whether name matches pattern, in which * stands for any
// run of characters (none included) and every other character for itself.
func Match(pattern, name string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == name
	}
	if !strings.HasPrefix(name, parts[0]) {
		return false
	}
	name = name[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(name, p)
		if i < 0 {
			return false
		}
		name = name[i+len(p):]
	}
	return len(name) >= len(last) && strings.HasSuffix(name, last)
}
