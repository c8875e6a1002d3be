package celrules

import (
	"fmt"

	apiservercel "k8s.io/apiserver/pkg/cel"
)

// Presence is what a transition rule needs to compare one value that may
// be absent, the way a JSON document does (absent is not the same as a
// zero value), below self and oldSelf.
type Presence struct {
	// Unchanged holds when the value is absent from both, or present in
	// both and equal (CEL equality: numbers by value, lists in order,
	// objects and maps member by member).
	Unchanged string
}

// PresenceOf builds the Presence of the value at way, the member names
// from self down. ok is false when a name cannot be written in CEL (the
// API server's escaping has no form for it).
func PresenceOf(way []string) (Presence, bool) {
	if len(way) == 0 {
		return Presence{}, false
	}
	for _, name := range way {
		if _, ok := apiservercel.Escape(name); !ok {
			return Presence{}, false
		}
	}
	f := field{segs: way}
	return Presence{
		Unchanged: fmt.Sprintf("(%s) == (%s) && (!(%s) || %s == %s)",
			f.has("self"), f.has("oldSelf"), f.has("self"), f.at("self"), f.at("oldSelf")),
	}, true
}
