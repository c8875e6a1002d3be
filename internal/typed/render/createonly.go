package render

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/lockstep-dev/lockstep/internal/validate/celrules"
	"github.com/lockstep-dev/lockstep/internal/validate/schema"
)

// usesSecrets holds when the old or the new object takes parameters from
// Secrets: then lockstep's webhook compares the parameters merged with the
// Secrets' values, which CEL cannot see, and the rule leaves the check to
// it.
const usesSecrets = "(has(self.parametersFrom) && size(self.parametersFrom) > 0) || (has(oldSelf.parametersFrom) && size(oldSelf.parametersFrom) > 0)"

// createOnlyRule is a transition rule on spec for one create-only
// parameter.
type createOnlyRule struct {
	path  []string // below spec.parameters
	plans []string // the plans in which it is create-only
	rule  apiextensionsv1.ValidationRule
}

// createOnlyRules builds one transition rule on spec per parameter that is
// create-only in some plan (in the plan's create schema, not in its update
// schema). A rule holds unless the object's plan (the new one, as in
// lockstep's webhook) makes the parameter create-only, and then only
// when the parameter is absent from the old and the new object or equal
// in both. Parameters CEL cannot compare exactly are left to lockstep's
// webhook, and listed in left with the reason.
func createOnlyRules(kind string, createOnly map[string][][]string, params *apiextensionsv1.JSONSchemaProps) (rules []createOnlyRule, left []string) {
	byPath := map[string]*createOnlyRule{}
	var keys []string
	for _, plan := range slices.Sorted(maps.Keys(createOnly)) {
		for _, p := range createOnly[plan] {
			key := strings.Join(p, "\x00")
			r, ok := byPath[key]
			if !ok {
				r = &createOnlyRule{path: p}
				byPath[key] = r
				keys = append(keys, key)
			}
			r.plans = append(r.plans, plan)
		}
	}
	slices.Sort(keys)
	for _, key := range keys {
		r := byPath[key]
		shown := parameterPath(r.path)
		if why := ruleBlocker(params, r.path); why != "" {
			left = append(left, fmt.Sprintf("%s (plans %s): %s; lockstep's webhook enforces it", shown, strings.Join(r.plans, ", "), why))
			continue
		}
		presence, ok := celrules.PresenceOf(append([]string{"parameters"}, r.path...))
		if !ok {
			left = append(left, fmt.Sprintf("%s (plans %s): a name on its path cannot be written in CEL; lockstep's webhook enforces it", shown, strings.Join(r.plans, ", ")))
			continue
		}
		quoted := make([]string, len(r.plans))
		for i, p := range r.plans {
			quoted[i] = strconv.Quote(p)
		}
		what := "create-only parameter"
		if !strings.ContainsAny(shown, "\r\n") { // a message is one line
			what += " " + shown
		}
		// The comparison comes first: an update that leaves the parameter
		// as it was, the usual one, stops there. The message is fixed, as
		// a hand-written rule's: the API server evaluates no expression to
		// refuse.
		r.rule = apiextensionsv1.ValidationRule{
			Rule: fmt.Sprintf("(%s) || !(self.plan in [%s]) || %s", presence.Unchanged, strings.Join(quoted, ", "), usesSecrets),
			Message: fmt.Sprintf("%s (%s): it cannot be set, changed or removed after the %s is created; leave it as it was at creation, or delete and recreate the %s",
				what, schema.CreateOnlyReason, kind, kind),
			FieldPath: fieldPath(r.path),
			Reason:    ptr(apiextensionsv1.FieldValueForbidden),
		}
		rules = append(rules, *r)
	}
	return rules, left
}

// ruleBlocker says why no rule can compare the parameter at path exactly:
// a part of the way is free JSON or may be null, or the value itself holds
// free JSON (CEL cannot see all of it). Empty when a rule can.
func ruleBlocker(params *apiextensionsv1.JSONSchemaProps, path []string) string {
	s := params
	for i, name := range path {
		next, ok := s.Properties[name]
		if s.Type != "object" || !ok {
			return fmt.Sprintf("the kind keeps %s as free JSON", parameterPath(path[:i]))
		}
		if next.Nullable {
			return fmt.Sprintf("%s may be null", parameterPath(path[:i+1]))
		}
		s = &next
	}
	if celrules.Opaque(s) {
		return "its value holds free JSON, which CEL cannot compare"
	}
	return ""
}

// identifier is a name a field path writes after a dot.
var identifier = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// fieldPath is where the API server reports a broken rule, from spec.
func fieldPath(path []string) string {
	out := ".parameters"
	for _, name := range path {
		switch {
		case identifier.MatchString(name):
			out += "." + name
		case !strings.ContainsAny(name, `'\`):
			out += "['" + name + "']"
		default:
			return ".parameters"
		}
	}
	return out
}

// planRule is the transition rule on spec.plan for a service whose plans
// cannot all change: lockstep's webhook allows a change when the old plan
// is updateable (its own plan_updateable, or else the service's). Plans
// the caller does not name follow the service.
func planRule(kind string, serviceUpdateable bool, updateable map[string]bool) *apiextensionsv1.ValidationRule {
	var listed []string
	for _, plan := range slices.Sorted(maps.Keys(updateable)) {
		if updateable[plan] != serviceUpdateable {
			listed = append(listed, strconv.Quote(plan))
		}
	}
	var rule string
	switch {
	case serviceUpdateable && len(listed) == 0:
		return nil
	case serviceUpdateable:
		rule = fmt.Sprintf("self == oldSelf || !(oldSelf in [%s])", strings.Join(listed, ", "))
	case len(listed) == 0:
		rule = "self == oldSelf"
	default:
		rule = fmt.Sprintf("self == oldSelf || oldSelf in [%s]", strings.Join(listed, ", "))
	}
	return &apiextensionsv1.ValidationRule{
		Rule: rule,
		Message: fmt.Sprintf("the broker does not allow plan changes from this plan (plan_updateable is false); the %s keeps its plan: to use another plan, create a new %s",
			kind, kind),
		Reason: ptr(apiextensionsv1.FieldValueForbidden),
	}
}
