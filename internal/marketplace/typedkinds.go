package marketplace

import (
	"slices"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/access"
	"github.com/lockstep-dev/lockstep/internal/typed/render"
)

// ActivatedKind reports whether broker sb activates a typed kind for
// service, and the names its spec.typedKinds gives the kind: those of the
// first entry that selects the service with a kind, a plural or short
// names, or else none (they are made from the service name).
func ActivatedKind(sb *v1alpha1.ServiceBroker, service string) (bool, render.Given) {
	selected := false
	for _, a := range sb.Spec.TypedKinds {
		if !slices.ContainsFunc(a.Services, func(p string) bool { return access.Match(p, service) }) {
			continue
		}
		if a.Kind != "" || a.Plural != "" || len(a.ShortNames) > 0 {
			return true, render.Given{Kind: a.Kind, Plural: a.Plural, ShortNames: slices.Clone(a.ShortNames)}
		}
		selected = true
	}
	return selected, render.Given{}
}

// AggregatesRoles reports whether broker sb asks for the typed kind of
// service to be added to the default roles: an entry of its
// spec.typedKinds that selects the service says aggregateToDefaultRoles.
func AggregatesRoles(sb *v1alpha1.ServiceBroker, service string) bool {
	return slices.ContainsFunc(sb.Spec.TypedKinds, func(a v1alpha1.TypedKindActivation) bool {
		return a.AggregateToDefaultRoles && slices.ContainsFunc(a.Services, func(p string) bool { return access.Match(p, service) })
	})
}

// KeepsKind reports whether broker sb keeps the typed kind an offering of
// service shows (its kind and plural): the service stays activated, and
// no other kind or plural is given to it (a plural no longer given is
// the one made from the kind).
func KeepsKind(sb *v1alpha1.ServiceBroker, service string, shown *v1alpha1.TypedKindStatus) bool {
	selected, given := ActivatedKind(sb, service)
	if !selected || (given.Kind != "" && given.Kind != shown.Kind) {
		return false
	}
	plural := given.Plural
	if plural == "" {
		plural = render.PluralOf(shown.Kind)
	}
	return plural == shown.Plural
}
