package admission

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/typed/render"
)

// namesTaken refuses a ServiceBroker (cur; old as it was, nil on a
// create) whose spec.typedKinds gives a kind names (kind, plural, short
// names) that a resource the API server serves (its discovery, outside
// the group of typed kinds) or another service's typed kind already has,
// each at its field with what has the name. Only the entries whose names
// the change gives or changes are looked at: a name taken later by
// something else does not block an unrelated change (the offering says
// what became of the kind then). The marketplace controller decides the
// same from the same names; this answers the administrator at once.
func (g *BrokerGuard) namesTaken(ctx context.Context, old, cur *v1alpha1.ServiceBroker) admission.Response {
	var given []int
	for i, a := range cur.Spec.TypedKinds {
		if (a.Kind != "" || a.Plural != "" || len(a.ShortNames) > 0) && !givenBefore(old, a) {
			given = append(given, i)
		}
	}
	if len(given) == 0 {
		return admission.Allowed("")
	}
	taken, err := g.takenNames(ctx, cur.Name)
	if err != nil {
		return admission.Errored(http.StatusServiceUnavailable, fmt.Errorf("could not read which names the cluster's resources and typed kinds have: %w; nothing was changed: retry", err))
	}
	var errs field.ErrorList
	for _, i := range given {
		a := cur.Spec.TypedKinds[i]
		path := field.NewPath("spec", "typedKinds").Index(i)
		names, err := render.NamesFor(a.Services[0], render.Given{Kind: a.Kind, Plural: a.Plural}, nil)
		if err != nil {
			errs = append(errs, field.Invalid(path.Child("kind"), a.Kind, err.Error()))
			continue
		}
		// A plural made from the kind given is the kind's name too.
		plural := path.Child("plural")
		if a.Plural == "" {
			plural = path.Child("kind")
		}
		checks := []struct {
			at   *field.Path
			name string
		}{{path.Child("kind"), strings.ToLower(names.Kind)}, {plural, names.Plural}}
		for j, s := range a.ShortNames {
			checks = append(checks, struct {
				at   *field.Path
				name string
			}{path.Child("shortNames").Index(j), s})
		}
		for _, c := range checks {
			at := c.at.String()
			if slices.ContainsFunc(errs, func(e *field.Error) bool { return e.Field == at }) {
				continue
			}
			if by, ok := taken[c.name]; ok && by.service != a.Services[0] {
				errs = append(errs, field.Invalid(c.at, c.name, fmt.Sprintf("the name %s is %s's: kubectl would find that first; give the kind of service %q another name", c.name, by.what, a.Services[0])))
			}
		}
	}
	if len(errs) == 0 {
		return admission.Allowed("")
	}
	return refusal(invalid(v1alpha1.GroupVersion.WithKind("ServiceBroker").GroupKind(), cur.Name, errs), nil)
}

// givenBefore reports whether old's spec.typedKinds has an entry that
// gives the same names to the same services as a.
func givenBefore(old *v1alpha1.ServiceBroker, a v1alpha1.TypedKindActivation) bool {
	if old == nil {
		return false
	}
	return slices.ContainsFunc(old.Spec.TypedKinds, func(b v1alpha1.TypedKindActivation) bool {
		return slices.Equal(a.Services, b.Services) && a.Kind == b.Kind && a.Plural == b.Plural && slices.Equal(a.ShortNames, b.ShortNames)
	})
}

// holder is what has a name: a served resource, or the typed kind of a
// service (service is then the service's name, for the broker's own).
type holder struct {
	what, service string
}

// takenNames are the names the API server's resources have outside the
// group of typed kinds, and those of the typed kinds offerings show,
// except for broker's own services (which may keep their names).
func (g *BrokerGuard) takenNames(ctx context.Context, broker string) (map[string]holder, error) {
	out := map[string]holder{}
	if g.Discovery != nil {
		_, lists, err := g.Discovery.ServerGroupsAndResources()
		if err != nil && (len(lists) == 0 || !discovery.IsGroupDiscoveryFailedError(err)) {
			return nil, err
		}
		for name, by := range render.ServedNames(lists) {
			out[name] = holder{what: by}
		}
	}
	var offerings v1alpha1.ServiceOfferingList
	if err := g.Reader.List(ctx, &offerings); err != nil {
		return nil, err
	}
	for _, o := range offerings.Items {
		tk := o.Status.TypedKind
		if tk == nil {
			continue
		}
		by := holder{what: fmt.Sprintf("kind %s of service %q of ServiceBroker %q", tk.Kind, o.Spec.Name, o.Spec.BrokerName)}
		if o.Spec.BrokerName == broker {
			by.service = o.Spec.Name
		}
		for _, name := range append([]string{strings.ToLower(tk.Kind), tk.Plural}, tk.ShortNames...) {
			out[name] = by
		}
	}
	return out, nil
}
