package operations

import (
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/journal"
)

// TypedIndex is what this replica's informers of typed kinds hold: the
// index admission reads to find which object holds an external id.
type TypedIndex interface {
	// Holds reports whether the informer of the typed kind of group and
	// kind holds namespace/name with uid; cached is false when this
	// replica has no synced informer of that kind.
	Holds(group, kind, namespace, name string, uid types.UID) (held, cached bool)
}

// indexed reports whether the object a create of a typed kind made (a
// provision or an adoption) is in this replica's informer of its kind,
// or whether there is nothing to wait for. A committed create releases
// the object's lock; a second create of the same external id is then
// refused only if admission's index holds the first object. A
// ServiceInstance is read through the cache, so the commit itself waits
// for the index; an object of a typed kind is read at the API server,
// so the commit waits for the informer here (until the grace ends: a
// lagging informer never keeps a lock for ever).
func (r *Reconciler) indexed(op *v1alpha1.BrokerOperation) bool {
	if r.Typed == nil || op.Spec.Target.APIGroup == "" {
		return true
	}
	if op.Spec.Verb != v1alpha1.VerbProvision && op.Spec.Verb != v1alpha1.VerbAdopt {
		return true
	}
	t := op.Spec.Target
	held, cached := r.Typed.Holds(t.APIGroup, string(t.Kind), journal.TargetNamespace(op), t.Name, t.UID)
	return held || !cached
}
