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
// (journal.SameSpec: the same SpecHash). It runs on every update that
// reaches the validating webhook, so it hashes only when it must: specs
// whose fields other than the parameters differ are not the same, and
// parameters equal byte for byte are; only parameters spelled differently
// are compared by their hash, which reads them as JSON values.
// TestSameInstanceSpecComparesEveryField fails when a field is added to the
// spec and not here.
func sameInstanceSpec(a, b *v1alpha1.ServiceInstanceSpec) bool {
	if a.BrokerName != b.BrokerName || a.ServiceName != b.ServiceName || a.PlanName != b.PlanName ||
		a.ExternalID != b.ExternalID || a.ParametersFromGeneration != b.ParametersFromGeneration ||
		!sameSources(a.ParametersFrom, b.ParametersFrom) {
		return false
	}
	return sameRaw(a.Parameters, b.Parameters) || journal.SameSpec(*a, *b)
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
