package render

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
	"github.com/lockstep-dev/lockstep/internal/validate/schema"
)

// Revision is the revision of what Render renders. Bump it with every
// change of this package that changes a CRD or a Report rendered from some
// service (a translation, a drop, a rule, a description, a column): the
// marketplace controller renders a kind, and applies its CRD, again when
// the revision changes, so that an upgrade of lockstep brings every typed
// kind in line without waiting for its catalog to change.
const Revision = 2

// Options are the administrator's and the cluster's say in a kind.
type Options struct {
	// Kind overrides the kind name made from the service name. Pass the
	// kind of the offering's existing CRD (found by LabelOfferingID or
	// AnnotationOfferingID) so that a renamed service keeps its kind.
	Kind string
	// Plural and ShortNames are the administrator's, when given: see
	// NamesFor.
	Plural     string
	ShortNames []string
	// Taken are names other kinds and resources use: see NamesFor.
	Taken Taken
}

// Report is what a rendering found, for the offering's status.
type Report struct {
	Names Names `json:"names"`
	// Dropped are the schema keywords the CRD does not keep: there it
	// accepts more than the schema, and lockstep's webhook checks.
	Dropped []Drop `json:"dropped,omitempty"`
	// Translated are keywords kept in another form with the same meaning.
	Translated []Drop `json:"translated,omitempty"`
	// Fallback, when set, says why spec.parameters is free JSON.
	Fallback string `json:"fallback,omitempty"`
	// Sensitive are the sensitive parameters of every plan (see Sensitive).
	Sensitive []string `json:"sensitive,omitempty"`
	// CreateOnly are the create-only parameters the API server refuses to
	// change, each with its plans.
	CreateOnly []string `json:"createOnly,omitempty"`
	// LeftToWebhook are rules that are not in the CRD, and why: lockstep's
	// webhook enforces them.
	LeftToWebhook []string `json:"leftToWebhook,omitempty"`
	// Notes say how the kind treats the plans (a plan without an update
	// schema, for example).
	Notes []string `json:"notes,omitempty"`
	// Problems are plans whose schemas lockstep cannot use, and limits a
	// schema went beyond.
	Problems []string `json:"problems,omitempty"`
}

// Render renders the CRD of the typed kind of service svc of broker
// brokerName: the union of its plans' create and update schemas as the
// schema of spec.parameters, create-only parameters and plan changes as
// transition rules, ServiceInstance's other spec fields and status. Every
// schema keyword it does not keep is in the report. The error says why the
// service gets no kind at all (its names); a schema, however bad, never
// makes Render fail: the parameters then fall back to free JSON and the
// report says why.
func Render(brokerName string, svc *osbapi.Service, opts Options) (*apiextensionsv1.CustomResourceDefinition, *Report, error) {
	names, err := NamesFor(svc.Name, Given{Kind: opts.Kind, Plural: opts.Plural, ShortNames: opts.ShortNames}, opts.Taken)
	if err != nil {
		return nil, nil, err
	}
	r := &Report{Names: names}
	params, createOnly, updateable := r.project(svc)

	parts := crdParts{
		names: names, brokerName: brokerName, serviceID: svc.ID, serviceName: svc.Name,
		description: fmt.Sprintf("%s is an instance of service %q of broker %q, held in lockstep with the broker. %s",
			names.Kind, svc.Name, brokerName, svc.Description),
		planRule: planRule(names.Kind, svc.PlanUpdateable, updateable),
	}
	parts.description = strings.TrimSpace(parts.description)
	if params == nil {
		parts.parameters = freeParameters()
	} else {
		parts.parameters = *params
	}
	rules, left := createOnlyRules(names.Kind, createOnly, &parts.parameters)
	r.LeftToWebhook = append(r.LeftToWebhook, left...)
	for _, rule := range rules {
		parts.rules = append(parts.rules, rule.rule)
	}

	crd, err := r.settle(parts, rules)
	if err != nil {
		return nil, nil, err
	}
	r.sortAndCompact()
	return crd, r, nil
}

// project projects the plans' schemas into the schema of spec.parameters;
// nil when it falls back to free JSON (the report says why). It returns
// each plan's create-only parameters and whether each plan is updateable.
func (r *Report) project(svc *osbapi.Service) (*apiextensionsv1.JSONSchemaProps, map[string][][]string, map[string]bool) {
	createOnly := map[string][][]string{}
	updateable := map[string]bool{}
	var union *node
	var unschematized []string
	usable := 0
	for i := range svc.Plans {
		sp := osbapi.ServicePlan{Service: svc, Plan: &svc.Plans[i]}
		plan := sp.Plan.Name
		updateable[plan] = sp.Updateable()
		ps, err := schema.Compile(sp.CreateSchema(), sp.UpdateSchema(), nil)
		if err != nil {
			r.Problems = append(r.Problems, fmt.Sprintf("plan %s: %v; lockstep refuses the plan's instances until the broker fixes its schema, and the kind leaves the plan out", plan, err))
			continue
		}
		usable++
		createOnly[plan] = ps.CreateOnlyPaths()
		r.Sensitive = append(r.Sensitive, Sensitive(ps)...)
		create, update := ps.Compiled()
		if create == nil && update == nil {
			unschematized = append(unschematized, plan)
			r.Notes = append(r.Notes, fmt.Sprintf("plan %s has no parameter schemas: it takes any parameters", plan))
			union = join(union, freeNode(), nil, r.conflict)
			continue
		}
		if update == nil {
			r.Notes = append(r.Notes, fmt.Sprintf("plan %s has no update schema: on update, too, the kind checks the parameters against what its create schema allows", plan))
		}
		var planNode *node
		for _, c := range []struct {
			which string
			s     *jsonschema.Schema
		}{{"create", create}, {"update", update}} {
			if c.s == nil {
				continue
			}
			p := &projector{
				where: fmt.Sprintf("plan %s, %s schema", plan, c.which), onPath: map[*jsonschema.Schema]bool{},
				dropped:    func(d Drop) { r.Dropped = append(r.Dropped, d) },
				translated: func(d Drop) { r.Translated = append(r.Translated, d) },
			}
			n := p.project(c.s, 0, true)
			if c.which == "create" {
				n = requiredBy(n, plan)
			}
			if p.exhausted {
				r.Problems = append(r.Problems, fmt.Sprintf("plan %s: its %s schema describes more than %d subschemas; the kind keeps spec.parameters as free JSON", plan, c.which, maxVisits))
				r.Fallback = "a plan's schema is too large"
				return nil, createOnly, updateable
			}
			if c.which == "update" {
				n = withoutCreateOnly(n, createOnly[plan])
			}
			planNode = join(planNode, n, nil, r.conflict)
		}
		union = join(union, planNode, nil, r.conflict)
	}
	switch {
	case usable == 0 && len(svc.Plans) > 0:
		r.Fallback = "no plan has a schema lockstep can use"
		return nil, createOnly, updateable
	case len(unschematized) > 0:
		r.Fallback = fmt.Sprintf("plan %s has no parameter schemas and takes any parameters", strings.Join(unschematized, ", "))
		return nil, createOnly, updateable
	case union == nil || union.free || union.typ != "object":
		r.Fallback = "the plans' schemas do not describe the parameters as an object the kind can type (see the dropped keywords)"
		return nil, createOnly, updateable
	}
	if count := countProperties(union); count > maxProperties {
		r.Problems = append(r.Problems, fmt.Sprintf("the plans' schemas have %d properties, more than the %d a kind takes; the kind keeps spec.parameters as free JSON", count, maxProperties))
		r.Fallback = "the schemas have too many properties"
		return nil, createOnly, updateable
	}
	params := emit(union, nil, &emitter{report: r.conflict, plans: usable})
	params.Description = parametersDescription
	if raw, err := json.Marshal(params); err != nil || len(raw) > maxSchemaBytes {
		r.Problems = append(r.Problems, fmt.Sprintf("the schema of spec.parameters would take more than %d KiB; the kind keeps spec.parameters as free JSON", maxSchemaBytes>>10))
		r.Fallback = "the schema is too large"
		return nil, createOnly, updateable
	}
	return &params, createOnly, updateable
}

// parametersDescription describes spec.parameters.
const parametersDescription = "Parameters are passed to the broker. lockstep checks them against the plan's full JSON Schema; this schema is the union of every plan's, and may accept more."

// freeParameters is spec.parameters as free JSON, as on ServiceInstance.
func freeParameters() apiextensionsv1.JSONSchemaProps {
	return apiextensionsv1.JSONSchemaProps{
		Type: "object", XPreserveUnknownFields: ptr(true),
		Description: "Parameters are passed to the broker and checked by lockstep against the plan's JSON Schema.",
	}
}

// conflict records what the union of the plans could not keep.
func (r *Report) conflict(at []string, keyword, why string) {
	r.Dropped = append(r.Dropped, Drop{Where: parameterPath(at), Keyword: keyword, Why: why})
}

// withoutCreateOnly returns the update schema's node n without the plan's
// create-only members: lockstep's webhook removes them from the
// parameters before it applies the update schema (they are compared with
// their old values instead), so only the create schema says what they may
// hold. No update may remove them either, so the node requires them: a
// member the create schema requires stays required in the plan's union of
// its two schemas. n is not changed.
func withoutCreateOnly(n *node, paths [][]string) *node {
	for _, p := range paths {
		n = without(n, p)
	}
	return n
}

// without returns n with the member at path marked as allowing nothing.
func without(n *node, path []string) *node {
	if n == nil || n.free || n.typ != "object" || len(path) == 0 {
		return n
	}
	c := *n
	c.props = make(map[string]*node, len(n.props)+1)
	for k, v := range n.props {
		c.props[k] = v
	}
	if len(path) == 1 {
		c.props[path[0]] = nil
		if !slices.Contains(c.required, path[0]) {
			c.required = append(slices.Clone(c.required), path[0])
		}
		return &c
	}
	child, ok := n.props[path[0]]
	if !ok {
		return n
	}
	c.props[path[0]] = without(child, path[1:])
	return &c
}

// requiredBy returns a plan's create schema node n with each object's
// required members marked as required at creation by plan, at every
// depth, for the descriptions and the report of those the CRD cannot
// require (see emit). n is not changed.
func requiredBy(n *node, plan string) *node {
	if n == nil || n.free {
		return n
	}
	c := *n
	if c.typ == "object" {
		if len(n.required) > 0 {
			c.reqBy = make(map[string][]string, len(n.required))
			for _, r := range n.required {
				c.reqBy[r] = []string{plan}
			}
		}
		if len(n.props) > 0 {
			c.props = make(map[string]*node, len(n.props))
			for k, v := range n.props {
				c.props[k] = requiredBy(v, plan)
			}
		}
		c.rest = requiredBy(n.rest, plan)
	}
	if c.typ == "array" {
		c.items = requiredBy(n.items, plan)
	}
	return &c
}

func countProperties(n *node) int {
	if n == nil {
		return 0
	}
	count := len(n.props)
	for _, p := range n.props {
		count += countProperties(p)
	}
	return count + countProperties(n.items) + countProperties(n.rest)
}

// settle builds the CRD and checks it as the API server does. What the API
// server would refuse goes, in this order, until it takes the CRD: a
// create-only rule it names, every create-only rule, the schema of the
// parameters.
func (r *Report) settle(parts crdParts, rules []createOnlyRule) (*apiextensionsv1.CustomResourceDefinition, error) {
	for attempt := 0; ; attempt++ {
		crd, err := build(parts)
		if err != nil {
			return nil, err
		}
		first := len(crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].XValidations) - len(parts.rules)
		errs := Validate(crd)
		if len(errs) == 0 {
			for _, rule := range rules {
				if slices.ContainsFunc(parts.rules, func(v apiextensionsv1.ValidationRule) bool { return v.Rule == rule.rule.Rule }) {
					r.CreateOnly = append(r.CreateOnly, fmt.Sprintf("%s (plans %s)", parameterPath(rule.path), strings.Join(rule.plans, ", ")))
				}
			}
			return crd, nil
		}
		switch {
		case attempt == 0 && len(parts.rules) > 0:
			bad := badRules(errs, first)
			if len(bad) == 0 {
				continue
			}
			var kept []apiextensionsv1.ValidationRule
			for i, rule := range parts.rules {
				if why, isBad := bad[i]; isBad {
					r.LeftToWebhook = append(r.LeftToWebhook, fmt.Sprintf("%s: the API server does not take its rule (%s); lockstep's webhook enforces it", ruleTarget(rules, rule), why))
					continue
				}
				kept = append(kept, rule)
			}
			parts.rules = kept
		case len(parts.rules) > 0:
			for _, rule := range parts.rules {
				r.LeftToWebhook = append(r.LeftToWebhook, fmt.Sprintf("%s: the API server does not take the rules together (%s); lockstep's webhook enforces it", ruleTarget(rules, rule), errs.ToAggregate()))
			}
			parts.rules = nil
		case r.Fallback == "":
			r.Problems = append(r.Problems, fmt.Sprintf("the API server would not take the projected schema (%s); the kind keeps spec.parameters as free JSON", errs.ToAggregate()))
			r.Fallback = "the API server would not take the projected schema"
			parts.parameters = freeParameters()
		default:
			return nil, fmt.Errorf("the CRD of kind %s is not valid even with free parameters (a defect of lockstep): %w", parts.names.Kind, errs.ToAggregate())
		}
	}
}

// badRules returns the create-only rules (their index among them, which
// start at first among spec's rules) that errs name, each with the error.
func badRules(errs field.ErrorList, first int) map[int]string {
	bad := map[int]string{}
	prefix := "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations["
	for _, e := range errs {
		rest, ok := strings.CutPrefix(e.Field, prefix)
		if !ok {
			continue
		}
		var i int
		if _, err := fmt.Sscanf(rest, "%d]", &i); err != nil || i < first {
			continue
		}
		bad[i-first] = e.ErrorBody()
	}
	return bad
}

func ruleTarget(rules []createOnlyRule, v apiextensionsv1.ValidationRule) string {
	for _, r := range rules {
		if r.rule.Rule == v.Rule {
			return fmt.Sprintf("%s (plans %s)", parameterPath(r.path), strings.Join(r.plans, ", "))
		}
	}
	return "a create-only parameter"
}

// sortAndCompact orders the report's lists and removes repeats.
func (r *Report) sortAndCompact() {
	for _, list := range []*[]Drop{&r.Dropped, &r.Translated} {
		slices.SortFunc(*list, func(a, b Drop) int { return strings.Compare(a.String(), b.String()) })
		*list = slices.Compact(*list)
	}
	for _, list := range []*[]string{&r.Sensitive, &r.Problems, &r.Notes, &r.LeftToWebhook, &r.CreateOnly} {
		slices.Sort(*list)
		*list = slices.Compact(*list)
	}
}

// labelValue reports whether v fits a label value.
func labelValue(v string) bool { return len(validation.IsValidLabelValue(v)) == 0 }
