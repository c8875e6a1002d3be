package typedkinds

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/typed/object"
)

// Every replica keeps the objects of each established typed kind in an
// informer indexed by spec.externalID (Watcher.index), so that admission
// finds which object holds an external id with a lookup in memory, as it
// does for ServiceInstances, instead of a request to the API server per
// kind. A kind whose informer has not synced yet (its CRD was established
// a moment ago) is not answered: the caller asks the API server.

// externalIDIndex is the name of the index of spec.externalID.
const externalIDIndex = v1alpha1.FieldExternalID

// externalIDOf is the index value of an object of a typed kind: its
// spec.externalID.
func externalIDOf(obj any) ([]string, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("an object of a typed kind is a %T, not unstructured", obj)
	}
	if id, _, _ := unstructured.NestedString(u.Object, "spec", "externalID"); id != "" {
		return []string{id}, nil
	}
	return nil, nil
}

// ExternalIDHolders returns copies of the objects of kind whose
// spec.externalID is id, from this replica's informer of kind; cached is
// false when the replica has no synced informer of kind (not established,
// or a moment ago), and the caller must ask the API server.
func (w *Watcher) ExternalIDHolders(kind object.Kind, id string) (held []*unstructured.Unstructured, cached bool, _ error) {
	inf := w.informerOf(kind)
	if inf == nil {
		return nil, false, nil
	}
	items, err := inf.GetIndexer().ByIndex(externalIDIndex, id)
	if err != nil {
		return nil, false, fmt.Errorf("looking up external id %q among the %s objects: %w", id, kind.GVK.Kind, err)
	}
	for _, item := range items {
		if u, ok := item.(*unstructured.Unstructured); ok {
			held = append(held, u.DeepCopy())
		}
	}
	return held, true, nil
}

// EachObject calls fn with every object of every typed kind whose
// informer has synced in this replica. fn must not change the object.
func (w *Watcher) EachObject(fn func(kind object.Kind, u *unstructured.Unstructured)) {
	w.informing.Range(func(_, v any) bool {
		r := v.(*run)
		if inf := r.informer.Load(); inf != nil {
			for _, item := range (*inf).GetStore().List() {
				if u, ok := item.(*unstructured.Unstructured); ok {
					fn(r.kind, u)
				}
			}
		}
		return true
	})
}

// Holds reports whether this replica's informer of the typed kind of
// group and kind holds namespace/name with uid; cached is false when the
// replica has no synced informer of that kind.
func (w *Watcher) Holds(group, kind, namespace, name string, uid types.UID) (held, cached bool) {
	inf := w.informerWhere(func(k object.Kind) bool { return k.GVK.Group == group && k.GVK.Kind == kind })
	if inf == nil {
		return false, false
	}
	item, exists, err := inf.GetStore().GetByKey(namespace + "/" + name)
	if err != nil || !exists {
		return false, true
	}
	u, ok := item.(*unstructured.Unstructured)
	return ok && u.GetUID() == uid, true
}

// informerOf is the synced informer of kind, or nil.
func (w *Watcher) informerOf(kind object.Kind) toolscache.SharedIndexInformer {
	return w.informerWhere(func(k object.Kind) bool { return k == kind })
}

// informerWhere is the synced informer of the first kind match accepts,
// or nil.
func (w *Watcher) informerWhere(match func(object.Kind) bool) toolscache.SharedIndexInformer {
	var found toolscache.SharedIndexInformer
	w.informing.Range(func(_, v any) bool {
		r := v.(*run)
		if !match(r.kind) {
			return true
		}
		if inf := r.informer.Load(); inf != nil {
			found = *inf
		}
		return false
	})
	return found
}

// InstancesIn returns the objects of every typed kind in namespace, as
// the instances they are (object.ToInstance), from this replica's
// informers (each indexed by namespace); a kind whose informer has not
// synced yet has none.
func (w *Watcher) InstancesIn(namespace string) []*v1alpha1.ServiceInstance {
	var out []*v1alpha1.ServiceInstance
	w.informing.Range(func(_, v any) bool {
		r := v.(*run)
		inf := r.informer.Load()
		if inf == nil {
			return true
		}
		items, err := (*inf).GetIndexer().ByIndex(toolscache.NamespaceIndex, namespace)
		if err != nil {
			return true
		}
		for _, item := range items {
			if u, ok := item.(*unstructured.Unstructured); ok {
				if si, err := object.ToInstance(u, r.kind); err == nil {
					out = append(out, si)
				}
			}
		}
		return true
	})
	return out
}
