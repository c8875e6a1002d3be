package marketplace

import (
	"slices"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/access"
)

// ActivatedKind reports whether broker sb activates a typed kind for
// service, and the kind its spec.typedKinds gives it: the first entry that
// selects the service with a kind, or else none (the kind is made from the
// service name).
func ActivatedKind(sb *v1alpha1.ServiceBroker, service string) (bool, string) {
	selected := false
	for _, a := range sb.Spec.TypedKinds {
		if !slices.ContainsFunc(a.Services, func(p string) bool { return access.Match(p, service) }) {
			continue
		}
		if a.Kind != "" {
			return true, a.Kind
		}
		selected = true
	}
	return selected, ""
}

// KeepsKind reports whether broker sb keeps the typed kind an offering of
// service shows (kind): the service stays activated, and no kind other
// than kind is given to it.
func KeepsKind(sb *v1alpha1.ServiceBroker, service, kind string) bool {
	selected, given := ActivatedKind(sb, service)
	return selected && (given == "" || given == kind)
}
