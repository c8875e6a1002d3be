package admission

import (
	"context"
	"fmt"
	"slices"
	"sort"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/brokercall"
	"github.com/lockstep-dev/lockstep/internal/journal"
	"github.com/lockstep-dev/lockstep/internal/typed/object"
	"github.com/lockstep-dev/lockstep/internal/typed/render"
)

// One broker id, one object: an external id (spec.externalID, the OSB
// instance_id or binding_id) belongs to at most one ServiceInstance, and
// one ServiceBinding, in the cluster. A second object naming the same id
// would reach what the first one holds at the broker (the broker answers
// an identical provision with 200), and its delete would deprovision it
// under the first one's feet. So a create (adopting or not) that names an
// id another object holds is refused, and the refusal names that object
// only to a requester who may get it.
//
// Where it is decided (docs/design.md, "One broker id, one object"):
//
//   - the object's lock is keyed on its kind and external id
//     (journal.KeyOf), so that two creates of one id, in any namespaces
//     and through any replicas, contend for one lock and only one of them
//     reaches the broker; the lock is released once the operations
//     reconciler committed the change (the object is persisted, and in
//     its cache) or undid it (it never was);
//   - under the lock, before the broker call, this replica's cache is
//     asked which object holds the id (an index on spec.externalID): the
//     objects committed before the lock was taken, through the same kind
//     of cache that the commit read;
//   - the same question before the lock refuses the common case at once,
//     without writing the lock of what another object holds.
//
// What the cache names is confirmed at the API server before a refusal
// (the cache may still hold an object that is gone); a create that names
// no held id costs an index lookup, no API server request.

// IndexExternalIDs registers the index of spec.externalID
// (v1alpha1.FieldExternalID) of ServiceInstances and ServiceBindings with
// a cache's indexer, before the cache starts.
func IndexExternalIDs(ctx context.Context, indexer client.FieldIndexer) error {
	for _, obj := range []client.Object{&v1alpha1.ServiceInstance{}, &v1alpha1.ServiceBinding{}} {
		if err := indexer.IndexField(ctx, obj, v1alpha1.FieldExternalID, ExternalIDIndex); err != nil {
			return fmt.Errorf("indexing %T by spec.externalID: %w", obj, err)
		}
	}
	return nil
}

// ExternalIDIndex is the index value of an instance or binding: its
// external id (for a fake client's WithIndex in tests too).
func ExternalIDIndex(o client.Object) []string {
	if id := v1alpha1.ExternalIDOf(o); id != "" {
		return []string{id}
	}
	return nil
}

// externalIDs finds which object holds an external id.
type externalIDs struct {
	// cache is lockstep's informer cache, with IndexExternalIDs.
	cache client.Reader
	// direct reads the API server, past the cache.
	direct client.Reader
	// typed looks up the objects of typed kinds; nil asks the API server.
	typed TypedIndex
	// access says whether the requester may get the object that holds an
	// id, before a refusal names it.
	access Authorizer
}

// free refuses the create of obj, of kind, when another object of its kind
// holds its external id.
func (e *externalIDs) free(ctx context.Context, user authenticationv1.UserInfo, kind v1alpha1.TargetKind, obj client.Object) error {
	id := v1alpha1.ExternalIDOf(obj)
	if id == "" {
		return nil
	}
	holder, err := e.holder(ctx, kind, obj, id)
	if err != nil {
		return unavailable("could not check whether another %s holds external id %q: %v; nothing was changed and the broker was not called: retry",
			kindWord(kind), id, err)
	}
	if holder == nil {
		return nil
	}
	held := lockstepKind(kind)
	if t, ok := holder.(typedHeld); ok {
		held = heldKind{word: t.GetKind(), group: t.GroupVersionKind().Group, resource: t.plural}
	}
	named, err := e.mayName(ctx, user, held, holder.GetNamespace(), holder.GetName())
	if err != nil {
		return err
	}
	what := "another " + held.word + " in this cluster"
	if named {
		what = fmt.Sprintf("%s %q in namespace %q", held.word, holder.GetName(), holder.GetNamespace())
	}
	msg := fmt.Sprintf("external id %q is already held by %s: a broker's id belongs to one object; nothing was created and the broker was not called; "+
		"leave spec.externalID out to get a new id, or name another one", id, what)
	if named && v1alpha1.Adopting(obj) {
		msg += fmt.Sprintf("; to adopt it here, let that %s go first without its broker: kubectl annotate %s %s -n %s %s=%s, then delete it",
			held.word, held.resource, holder.GetName(), holder.GetNamespace(), v1alpha1.AnnotationReconcilePolicy, v1alpha1.PolicyDetachOnDelete)
	}
	return conflict("%s", msg)
}

// heldKind is the kind of an object that holds an external id, as a
// refusal names it.
type heldKind struct {
	// word is the kind as a person reads it: instance, binding, or the
	// name of a typed kind.
	word string
	// group and resource are what the requester is asked permission to
	// get before the object is named; resource is empty when the kind is
	// not known (a typed kind no longer served), and the object is not
	// named then.
	group, resource string
}

// lockstepKind is how a refusal names an object of kind, a ServiceInstance
// or a ServiceBinding of lockstep.dev.
func lockstepKind(kind v1alpha1.TargetKind) heldKind {
	return heldKind{word: kindWord(kind), group: v1alpha1.GroupVersion.Group, resource: resourceOf(kind)}
}

// lockHolderKind is the kind of the object whose operation, holder, holds
// the lock req asks for: the kind the lock names, or, for a lock written
// without it, req's own. A typed kind's resource is its CRD's, from the
// cache; a kind whose CRD cannot be read there is named without it, and
// its object is not named.
func (e *externalIDs) lockHolderKind(ctx context.Context, req brokercall.Request, holder *journal.Operation) heldKind {
	kind, group := holder.Kind, holder.APIGroup
	if kind == "" {
		kind, group = req.Kind, req.APIGroup
	}
	if group == "" || group == v1alpha1.GroupVersion.Group {
		return lockstepKind(kind)
	}
	held := heldKind{word: string(kind), group: group}
	if k, ok, err := object.KindNamed(ctx, e.cache, group, string(kind)); err == nil && ok {
		held.resource = k.Plural
	}
	return held
}

// holder returns the object of kind, other than obj, that holds id, or nil:
// the cache's index names the candidates, and the API server confirms the
// oldest one that still exists. An instance's id may also be held by an
// object of a typed kind (typedHolder).
func (e *externalIDs) holder(ctx context.Context, kind v1alpha1.TargetKind, obj client.Object, id string) (client.Object, error) {
	held, err := e.cachedHolder(ctx, kind, obj, id)
	if held != nil || err != nil || kind == v1alpha1.KindServiceBinding {
		return held, err
	}
	return e.typedHolder(ctx, obj, id)
}

// cachedHolder is the ServiceInstance or ServiceBinding, other than obj,
// that holds id, or nil.
func (e *externalIDs) cachedHolder(ctx context.Context, kind v1alpha1.TargetKind, obj client.Object, id string) (client.Object, error) {
	list := listOf(kind)
	if err := e.cache.List(ctx, list, client.MatchingFields{v1alpha1.FieldExternalID: id}); err != nil {
		return nil, err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	candidates := make([]client.Object, 0, len(items))
	for _, item := range items {
		if c, ok := item.(client.Object); ok {
			candidates = append(candidates, c)
		}
	}
	sort.Slice(candidates, func(i, j int) bool {
		return candidates[i].GetCreationTimestamp().Time.Before(candidates[j].GetCreationTimestamp().Time)
	})
	for _, c := range candidates {
		if c.GetUID() == obj.GetUID() {
			continue
		}
		current := newOf(kind)
		if err := e.direct.Get(ctx, client.ObjectKeyFromObject(c), current); err != nil {
			if apierrors.IsNotFound(err) {
				continue // gone; the cache has not heard yet
			}
			return nil, err
		}
		if current.GetUID() == c.GetUID() {
			return current, nil
		}
	}
	return nil, nil
}

// typedHolder returns the object of a typed kind, other than obj, that
// holds instance id id, or nil. The typed kinds are the CRDs in the cache;
// each kind's objects are looked up in this replica's index of the kind
// (TypedIndex), and what it names is confirmed at the API server, as for
// ServiceInstances. A kind the index does not hold yet (its CRD was
// established a moment ago) is asked at the API server instead, with one
// list by the field spec.externalID, which every typed kind's CRD declares
// selectable. A cluster without typed kinds asks nothing.
func (e *externalIDs) typedHolder(ctx context.Context, obj client.Object, id string) (client.Object, error) {
	var crds apiextensionsv1.CustomResourceDefinitionList
	if err := e.cache.List(ctx, &crds, client.MatchingLabels{render.LabelManagedBy: render.ManagedBy}); err != nil {
		if runtime.IsNotRegisteredError(err) {
			return nil, nil // a reader without CRDs knows no typed kinds
		}
		return nil, err
	}
	var held []typedHeld
	for i := range crds.Items {
		k, ok := object.KindOf(&crds.Items[i])
		if !ok {
			continue
		}
		found, err := e.typedHolders(ctx, k, crds.Items[i].Spec.Names.ListKind, id)
		if err != nil {
			return nil, err
		}
		for _, h := range found {
			if h.GetUID() != obj.GetUID() {
				held = append(held, h)
			}
		}
	}
	slices.SortFunc(held, func(a, b typedHeld) int {
		return a.GetCreationTimestamp().Compare(b.GetCreationTimestamp().Time)
	})
	for _, h := range held {
		if !h.cached {
			return h, nil
		}
		current := &unstructured.Unstructured{}
		current.SetGroupVersionKind(h.GroupVersionKind())
		if err := e.direct.Get(ctx, client.ObjectKeyFromObject(h), current); err != nil {
			if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
				continue // gone; the index has not heard yet
			}
			return nil, err
		}
		if current.GetUID() == h.GetUID() {
			return typedHeld{Unstructured: current, plural: h.plural}, nil
		}
	}
	return nil, nil
}

// typedHolders returns the objects of kind k (whose list kind is listKind)
// that hold id: from the index when it holds k's objects, else from the
// API server.
func (e *externalIDs) typedHolders(ctx context.Context, k object.Kind, listKind, id string) ([]typedHeld, error) {
	if e.typed != nil {
		found, cached, err := e.typed.ExternalIDHolders(k, id)
		if err != nil {
			return nil, err
		}
		if cached {
			held := make([]typedHeld, 0, len(found))
			for _, u := range found {
				held = append(held, typedHeld{Unstructured: u, plural: k.Plural, cached: true})
			}
			return held, nil
		}
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(k.GVK.GroupVersion().WithKind(listKind))
	if err := e.direct.List(ctx, list, client.MatchingFields{v1alpha1.FieldExternalID: id}); err != nil {
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			return nil, nil // the kind is not served (yet, or any more)
		}
		return nil, err
	}
	held := make([]typedHeld, 0, len(list.Items))
	for j := range list.Items {
		held = append(held, typedHeld{Unstructured: &list.Items[j], plural: k.Plural})
	}
	return held, nil
}

// typedHeld is an object of a typed kind that holds an external id, with
// its kind's resource; cached when it was read from the index, and is
// still to be confirmed at the API server.
type typedHeld struct {
	*unstructured.Unstructured
	plural string
	cached bool
}

// TypedIndex looks up the objects of a typed kind by external id in this
// replica's informers (typedkinds.Watcher).
type TypedIndex interface {
	// ExternalIDHolders returns the objects of kind whose spec.externalID
	// is id; cached is false when the replica holds no synced informer of
	// kind, and the API server must be asked.
	ExternalIDHolders(kind object.Kind, id string) (held []*unstructured.Unstructured, cached bool, _ error)
}

// inFlight refuses a change whose lock (keyed on the external id) is held
// by an operation on another object: a create that names the id of an
// object being created or deleted (a create does not wait for it: see
// journal.Intent.Creates), or any change of an object while such a create
// holds its lock for a moment. The other object may be of another kind (a
// ServiceInstance and the objects of typed kinds share the locks of
// instance ids); it is named, with its kind, only to a requester who may
// get it. Nil when the holder is about the intent's object itself.
func (e *externalIDs) inFlight(ctx context.Context, req brokercall.Request, holder *journal.Operation) error {
	if holder == nil || holder.About(journal.KeyOf(req.Kind, req.Object)) {
		return nil
	}
	held := e.lockHolderKind(ctx, req, holder)
	named, err := e.mayName(ctx, req.Who.User, held, holder.Namespace, holder.Name)
	if err != nil {
		return err
	}
	what := "a change of another " + held.word + " that names it"
	if named {
		what = fmt.Sprintf("a change of %s %q in namespace %q that names it (%s)", held.word, holder.Name, holder.Namespace, holder)
	}
	next := "retry when it has finished"
	if req.ClaimsID() {
		next += fmt.Sprintf(" (if the other %s keeps the id, name another one)", held.word)
	}
	return conflict("external id %q is in use: %s is in flight at the broker; nothing was changed: %s", v1alpha1.ExternalIDOf(req.Object), what, next)
}

// mayName reports whether user may get the object namespace/name of kind
// held, and so be told which it is.
func (e *externalIDs) mayName(ctx context.Context, user authenticationv1.UserInfo, held heldKind, namespace, name string) (bool, error) {
	if held.resource == "" {
		return false, nil
	}
	ok, err := allowed(ctx, e.access, user, authorizationv1.ResourceAttributes{
		Namespace: namespace, Verb: "get", Group: held.group, Resource: held.resource, Name: name})
	if err != nil {
		return false, unavailable("%v; nothing was changed and the broker was not called: retry", err)
	}
	return ok, nil
}

// externalIDFree is the check before the lock: a create that names an
// external id another object holds is refused without a write.
type externalIDFree[T client.Object] struct {
	ids  *externalIDs
	kind v1alpha1.TargetKind
}

func (c *externalIDFree[T]) Name() string { return "external-id" }

func (c *externalIDFree[T]) Check(ctx context.Context, a *Attributes[T]) (field.ErrorList, admission.Warnings, error) {
	if a.Operation != admissionv1.Create {
		return nil, nil, nil
	}
	return nil, nil, c.ids.free(ctx, a.User, c.kind, a.New)
}

// resourceOf is the API resource of kind.
func resourceOf(kind v1alpha1.TargetKind) string {
	if kind == v1alpha1.KindServiceBinding {
		return "servicebindings"
	}
	return "serviceinstances"
}

// newOf returns an empty object of kind.
func newOf(kind v1alpha1.TargetKind) client.Object {
	if kind == v1alpha1.KindServiceBinding {
		return &v1alpha1.ServiceBinding{}
	}
	return &v1alpha1.ServiceInstance{}
}

// listOf returns an empty list of kind.
func listOf(kind v1alpha1.TargetKind) client.ObjectList {
	if kind == v1alpha1.KindServiceBinding {
		return &v1alpha1.ServiceBindingList{}
	}
	return &v1alpha1.ServiceInstanceList{}
}
