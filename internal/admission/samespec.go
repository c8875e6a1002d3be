package admission

import (
	"bytes"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/journal"
)

// sameInstanceSpec reports whether two instance specs say the same thing,
// by the one definition the journal and the controllers use too
// (journal.SameSpec: the same SpecHash). Specs equal field by field are
// the same without hashing: it runs on every update that reaches the
// checks, and most of those change no spec at all.
// TestSameInstanceSpecComparesEveryField fails when a field is added to the
// spec and not to equalInstanceSpec.
func sameInstanceSpec(a, b *v1alpha1.ServiceInstanceSpec) bool {
	return equalInstanceSpec(a, b) || journal.SameSpec(*a, *b)
}

// equalInstanceSpec reports whether two instance specs are equal as
// equality.Semantic.DeepEqual tells, without walking them by reflection.
func equalInstanceSpec(a, b *v1alpha1.ServiceInstanceSpec) bool {
	return a.BrokerName == b.BrokerName && a.ServiceName == b.ServiceName && a.PlanName == b.PlanName &&
		a.ExternalID == b.ExternalID && sameRaw(a.Parameters, b.Parameters) &&
		a.ParametersFromGeneration == b.ParametersFromGeneration && sameSources(a.ParametersFrom, b.ParametersFrom)
}

// sameSources compares two lists of parameter sources in order; nil and
// empty are the same, as for equality.Semantic.
func sameSources(a, b []v1alpha1.ParametersFromSource) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// sameRaw compares two optional raw JSON values byte for byte, as
// equality.Semantic does.
func sameRaw(a, b *runtime.RawExtension) bool {
	if a == nil || b == nil {
		return a == b
	}
	if !bytes.Equal(a.Raw, b.Raw) {
		return false
	}
	return (a.Object == nil && b.Object == nil) || equality.Semantic.DeepEqual(a.Object, b.Object)
}
