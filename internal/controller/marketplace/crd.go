package marketplace

// The CRD of each typed kind: applied (server-side, after a server-side
// dry run) while its service is activated, deleted once it is not and no
// object of the kind is left. The CRDs lockstep applies carry the label
// app.kubernetes.io/managed-by=lockstep; only those are watched and cached.
//
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;list;watch;create;patch;update;delete
// +kubebuilder:rbac:groups=services.lockstep.dev,resources=*,verbs=get;list;watch;create;update;patch;delete;deletecollection

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/typed/inuse"
	typedobject "github.com/lockstep-dev/lockstep/internal/typed/object"
	"github.com/lockstep-dev/lockstep/internal/typed/render"
)

// FieldManager is the field manager of lockstep's server-side applies.
const FieldManager = "lockstep"

// Annotations lockstep sets on a typed kind's CRD, beside render's.
const (
	// AnnotationAppliedFrom is what the CRD was applied from: the kind's
	// renderedFrom (which holds the renderer's revision) and whether its
	// roles aggregate. The CRD is applied again only when it changes (or
	// while it keeps deprecated parameters).
	AnnotationAppliedFrom = render.Group + "/applied-from"
	// AnnotationDeprecated lists the parameters the CRD keeps, deprecated,
	// because objects still set them: their paths below spec.parameters,
	// as a JSON array.
	AnnotationDeprecated = render.Group + "/deprecated-parameters"
	// AnnotationUnrequired lists the parameters every plan requires at
	// creation that the CRD does not require, because objects made before
	// lack them: their paths below spec.parameters, as a JSON array.
	AnnotationUnrequired = render.Group + "/unrequired-parameters"
)

// unrequiredWhy says, in status.typedKind.dropped, why the CRD does not
// require a parameter objects lack.
const unrequiredWhy = "objects of the kind made before every plan required it at creation lack it, and the CRD would refuse every update of them: the kind marks it required once none lacks it; lockstep's webhook requires it of new objects"

// maxObjectsNamed is how many objects of a kind a condition names.
const maxObjectsNamed = 5

// settleKind brings the CRD of the typed kind of offering cur (nil: not
// stored yet) of service id in line with k, what the catalog and the
// ServiceBroker say of it, and returns what the offering is to show. A
// kind the offering showed and no longer has (deactivated, or given
// another kind) is retired first; while objects of it remain, it stays
// and the offering keeps showing it.
func (s *sync) settleKind(ctx context.Context, cur *v1alpha1.ServiceOffering, id string, k typedKind) typedKind {
	if cur != nil && cur.Status.TypedKind != nil && (k.status == nil || k.status.CRDName != cur.Status.TypedKind.CRDName) {
		if kept, held := s.retire(ctx, id, cur.Status.TypedKind); held {
			return kept
		}
	}
	if k.status == nil || k.condition != nil {
		return k
	}
	return s.apply(ctx, id, k)
}

// retire deletes the CRD of kind tk of service id and the kind's roles,
// unless objects of the kind remain: then it returns what the offering
// shows while they do, and true.
//
// An object created between the list that finds none and the CRD's
// deletion would go with the CRD. So when a list finds none, the CRD is
// marked retiring first (typedobject.AnnotationRetiring; lockstep's webhook
// then refuses creates of the kind) and listed again only once the mark
// is retireGrace old: by then every create admitted before the mark is
// stored or given up. An object that shows up after all keeps the CRD and
// removes the mark; activating the kind again removes it too (apply).
func (s *sync) retire(ctx context.Context, id string, tk *v1alpha1.TypedKindStatus) (typedKind, bool) {
	kept := tk.DeepCopy()
	live, err := s.liveCRD(ctx, tk.CRDName)
	if errors.Is(err, errNotOurs) {
		return typedKind{}, false // not lockstep's to delete
	}
	if err != nil {
		return s.failed(kept, err), true
	}
	if live == nil {
		// Gone already: nothing of it to delete but its roles.
		return typedKind{}, !s.deleteRoles(ctx, tk.Plural)
	}
	if live.Annotations[render.AnnotationOfferingID] != id {
		return typedKind{}, false // another offering's: not this one's to delete
	}
	kept.Established = typedobject.Established(live)
	since, marked := typedobject.Retiring(live)
	if !marked {
		objs, err := inuse.Objects(ctx, s.kinds, tk)
		if err != nil {
			return s.failed(kept, err), true
		}
		if len(objs) > 0 {
			return s.inUse(kept, objs), true
		}
		if since, err = s.markRetiring(ctx, live, true); err != nil {
			return s.failed(kept, err), true
		}
	}
	if wait := min(s.retireGrace-time.Since(since), s.retireGrace); wait > 0 {
		s.requeue(wait)
		return typedKind{status: kept, condition: condition(metav1.ConditionFalse, ReasonRetiring, fmt.Sprintf(
			"the service no longer has kind %s in ServiceBroker %q spec.typedKinds, and no object of the kind is left: its CRD is marked retiring, new objects of the kind are refused, and %s after the mark the CRD and its roles are deleted, unless an object created just before shows up; activate the kind again to keep it",
			tk.Kind, s.broker.Name, s.retireGrace))}, true
	}
	objs, err := inuse.Objects(ctx, s.kinds, tk)
	if err != nil {
		return s.failed(kept, err), true
	}
	if len(objs) > 0 {
		if _, err := s.markRetiring(ctx, live, false); err != nil {
			return s.failed(kept, err), true
		}
		return s.inUse(kept, objs), true
	}
	if !s.deleteRoles(ctx, tk.Plural) {
		return s.failed(kept, errors.New("the kind's roles could not be deleted")), true
	}
	if err := ignoreGone(s.client.Delete(ctx, live, client.Preconditions{UID: ptrUID(live)})); err != nil {
		return s.failed(kept, fmt.Errorf("deleting CRD %s: %w", tk.CRDName, err)), true
	}
	s.count("CustomResourceDefinition", "delete")
	return typedKind{}, false
}

// inUse is what the offering of kind tk shows while objs, objects of the
// kind, keep its CRD.
func (s *sync) inUse(tk *v1alpha1.TypedKindStatus, objs []unstructured.Unstructured) typedKind {
	return typedKind{status: tk, condition: condition(metav1.ConditionFalse, ReasonInUse, fmt.Sprintf(
		"the service no longer has kind %s in ServiceBroker %q spec.typedKinds, but %d object(s) of the kind remain (%s): deleting its CRD would delete them, so the CRD stays; delete them, or activate the kind again",
		tk.Kind, s.broker.Name, len(objs), inuse.Some(inuse.Names(objs), maxObjectsNamed)))}
}

// markRetiring sets typedobject.AnnotationRetiring on crd to the time now
// (rounded up to the second, so that the grace counted from it is never
// shorter), or removes it, and returns the time set.
func (s *sync) markRetiring(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, retiring bool) (time.Time, error) {
	now := time.Now().UTC().Truncate(time.Second).Add(time.Second)
	var value any // nil removes it
	if retiring {
		value = now.Format(time.RFC3339)
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{typedobject.AnnotationRetiring: value}}})
	if err != nil {
		return now, err
	}
	if err := s.client.Patch(ctx, crd, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return now, fmt.Errorf("marking CRD %s retiring (%t): %w", crd.Name, retiring, err)
	}
	s.count("CustomResourceDefinition", "patch")
	return now, nil
}

// apply applies the CRD of k, unless the CRD the API server holds was
// applied from the same (and keeps no deprecated parameters), and returns
// k with its condition.
func (s *sync) apply(ctx context.Context, id string, k typedKind) typedKind {
	tk := k.status.DeepCopy()
	k.status = tk
	live, err := s.liveCRD(ctx, tk.CRDName)
	if errors.Is(err, errNotOurs) {
		return withCondition(k, metav1.ConditionFalse, ReasonCRDTaken, fmt.Sprintf(
			"CRD %s exists and lockstep did not create it: lockstep leaves it as it is, and the kind is not served; delete that CRD, or give the service another kind in ServiceBroker %q spec.typedKinds",
			tk.CRDName, s.broker.Name))
	}
	if err != nil {
		return s.failed(tk, err)
	}
	if live != nil && live.Annotations[render.AnnotationOfferingID] != id {
		return withCondition(k, metav1.ConditionFalse, ReasonCRDTaken, fmt.Sprintf(
			"CRD %s belongs to service %q of ServiceBroker %q, whose objects keep it: the kind is not served for this service; give this service another kind in ServiceBroker %q spec.typedKinds, or delete the other kind's objects",
			tk.CRDName, live.Annotations[render.AnnotationServiceName], live.Annotations[render.AnnotationBroker], s.broker.Name))
	}
	if live != nil {
		if _, retiring := typedobject.Retiring(live); retiring {
			// Activated again while being retired.
			if _, err := s.markRetiring(ctx, live, false); err != nil {
				return s.failed(tk, err)
			}
		}
	}
	from := appliedFrom(tk, k.aggregate)
	if live == nil || live.Annotations[AnnotationAppliedFrom] != from || live.Annotations[AnnotationDeprecated] != "" || live.Annotations[AnnotationUnrequired] != "" {
		next, refusal, err := s.applyCRD(ctx, live, k, from)
		var held *errHeld
		switch {
		case errors.As(err, &held):
			s.retry = true // objects may stop setting them
			tk.Established = typedobject.Established(live)
			tk.DeprecatedParameters = deprecatedOf(live)
			if len(held.retyped) > 0 {
				return withCondition(k, metav1.ConditionFalse, ReasonCRDUpdateHeld, fmt.Sprintf(
					"the catalog as it is now changes the type of parameters that objects of kind %s set as objects (%s), and the API server would drop what the objects hold there: the CRD as it was stays, and its objects keep working. Remove those parameters from the objects (kubectl get %s -A), or have the broker's schema keep their type, and lockstep applies the new CRD",
					tk.Kind, inuse.Some(held.retyped, maxObjectsNamed), tk.Plural))
			}
			return withCondition(k, metav1.ConditionFalse, ReasonCRDUpdateHeld, fmt.Sprintf(
				"the catalog as it is now drops parameters that objects of kind %s set (%s), and the CRD that keeps them, deprecated, is beyond what a kind takes or what the API server accepts (%s): the CRD as it was stays, and its objects keep working. Remove those parameters from the objects (kubectl get %s -A), and lockstep applies the new CRD",
				tk.Kind, inuse.Some(held.kept, maxObjectsNamed), held.why, tk.Plural))
		case err != nil:
			return s.failed(tk, err)
		case refusal != "" && live == nil:
			return withCondition(k, metav1.ConditionFalse, ReasonCRDRefused, fmt.Sprintf(
				"the API server refuses the CRD of kind %s: %s; the kind is not served. A CRD lockstep renders should be accepted: report it, and look for a policy of the cluster that refuses CRDs",
				tk.Kind, refusal))
		case refusal != "":
			tk.Established = typedobject.Established(live)
			tk.DeprecatedParameters = deprecatedOf(live)
			return withCondition(k, metav1.ConditionFalse, ReasonCRDUpdateRefused, fmt.Sprintf(
				"the API server refuses the CRD of kind %s rendered from the catalog as it is now: %s; the CRD as it was stays, and its objects keep working. A CRD lockstep renders should be accepted: report it, and look for a policy of the cluster that refuses CRDs",
				tk.Kind, refusal))
		}
		live = next
	}
	return shown(k, live)
}

// shown is k, whose CRD is live (applied from what k is applied from),
// with what live says: whether the API server serves the kind, and the
// parameters the CRD keeps, deprecated.
func shown(k typedKind, live *apiextensionsv1.CustomResourceDefinition) typedKind {
	tk := k.status.DeepCopy()
	k.status = tk
	tk.Established = typedobject.Established(live)
	tk.DeprecatedParameters = deprecatedOf(live)
	tk.Dropped = withUnrequired(tk.Dropped, unrequiredOf(live))
	k.notes = droppedNote(tk) + k.notes
	if !tk.Established {
		return withCondition(k, metav1.ConditionFalse, ReasonApplying, fmt.Sprintf(
			"the CRD of kind %s (%s) is applied; the API server does not serve the kind yet%s", tk.Kind, tk.CRDName, k.notes))
	}
	msg := fmt.Sprintf("the API server serves kind %s (%s): kubectl explain %s.spec.parameters", tk.Kind, tk.APIVersion, tk.Plural)
	if len(tk.DeprecatedParameters) > 0 {
		msg += fmt.Sprintf("; parameters %s are kept, deprecated, while objects set them", strings.Join(tk.DeprecatedParameters, ", "))
	}
	if tk.FreeParameters != "" {
		return withCondition(k, metav1.ConditionTrue, ReasonFreeParameters, fmt.Sprintf("%s; spec.parameters is free JSON: %s%s", msg, tk.FreeParameters, k.notes))
	}
	return withCondition(k, metav1.ConditionTrue, ReasonEstablished, msg+k.notes)
}

// applyCRD renders k's CRD, keeps what objects still set of live's
// parameters, and applies it: a server-side dry run first, then the
// apply, then the kind's roles. It returns the CRD the API server holds
// after, or the API server's refusal (nothing was changed), or an error.
func (s *sync) applyCRD(ctx context.Context, live *apiextensionsv1.CustomResourceDefinition, k typedKind, from string) (*apiextensionsv1.CustomResourceDefinition, string, error) {
	rendered, err := k.crd()
	if err != nil {
		return nil, "", fmt.Errorf("rendering the CRD of kind %s: %w", k.status.Kind, err)
	}
	crd := rendered.DeepCopy()
	kept, err := s.keepDeprecated(ctx, live, crd, k.status)
	if err != nil {
		return nil, "", err
	}
	unrequired, err := s.unrequire(ctx, live, crd, k.status)
	if err != nil {
		return nil, "", err
	}
	crd.Annotations[AnnotationAppliedFrom] = from
	for annotation, paths := range map[string][]string{AnnotationDeprecated: kept, AnnotationUnrequired: unrequired} {
		if len(paths) == 0 {
			continue
		}
		raw, err := json.Marshal(paths)
		if err != nil {
			return nil, "", fmt.Errorf("writing annotation %s of CRD %s: %w", annotation, crd.Name, err)
		}
		crd.Annotations[annotation] = string(raw)
	}
	if live != nil && live.Annotations[AnnotationAppliedFrom] == from && live.Annotations[AnnotationDeprecated] == crd.Annotations[AnnotationDeprecated] &&
		live.Annotations[AnnotationUnrequired] == crd.Annotations[AnnotationUnrequired] {
		return live, "", nil // the same as applied before
	}
	u, err := applyable(crd)
	if err != nil {
		return nil, "", err
	}
	if err := s.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u.DeepCopy()), client.FieldOwner(FieldManager), client.ForceOwnership, client.DryRunAll); err != nil {
		if refused(err) {
			return nil, err.Error(), nil
		}
		return nil, "", fmt.Errorf("applying CRD %s (dry run): %w", crd.Name, err)
	}
	if err := s.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		if refused(err) {
			return nil, err.Error(), nil
		}
		return nil, "", fmt.Errorf("applying CRD %s: %w", crd.Name, err)
	}
	s.count("CustomResourceDefinition", "apply")
	var next apiextensionsv1.CustomResourceDefinition
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &next); err != nil {
		return nil, "", fmt.Errorf("reading applied CRD %s: %w", crd.Name, err)
	}
	if err := s.applyRoles(ctx, &next, k.aggregate); err != nil {
		return nil, "", err
	}
	return &next, "", nil
}

// keepDeprecated adds to crd's spec.parameters each property, at any
// depth, that objects of the kind set, that live has and that crd no
// longer has, as live has it, its description starting with
// render.DeprecatedPrefix (see render.Keep): the API server would
// otherwise prune it from the objects. It returns their paths, sorted, or
// errHeld when the CRD that keeps them goes beyond what a kind takes or is
// one the API server would refuse, or when crd changes the type of values
// objects set so that the API server would prune their members.
func (s *sync) keepDeprecated(ctx context.Context, live, crd *apiextensionsv1.CustomResourceDefinition, tk *v1alpha1.TypedKindStatus) ([]string, error) {
	if live == nil {
		return nil, nil
	}
	was, now := parametersOf(live), parametersOf(crd)
	if !render.Loses(was, now) {
		return nil, nil // nothing the objects could set is gone
	}
	objs, err := inuse.Objects(ctx, s.kinds, tk)
	if err != nil {
		return nil, err
	}
	params, kept, err := render.Keep(was, now, inuse.Parameters(objs))
	var retyped *render.RetypedError
	switch {
	case errors.As(err, &retyped):
		return nil, &errHeld{retyped: retyped.Paths, why: err.Error()}
	case err != nil:
		return nil, &errHeld{kept: kept, why: err.Error()}
	}
	if len(kept) == 0 {
		return nil, nil
	}
	spec := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	spec.Properties["parameters"] = *params
	crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = spec
	if errs := render.Validate(crd); len(errs) > 0 {
		why := errs[0].Error()
		if len(errs) > 1 {
			why += fmt.Sprintf(" (and %d more)", len(errs)-1)
		}
		return nil, &errHeld{kept: kept, why: why}
	}
	return kept, nil
}

// unrequire takes out of crd's spec.parameters each required member that
// an object of the kind lacks (render.Unrequire), and returns their paths,
// sorted. A kind whose CRD is new has no objects; one whose parameters
// require nothing needs no look at them.
func (s *sync) unrequire(ctx context.Context, live, crd *apiextensionsv1.CustomResourceDefinition, tk *v1alpha1.TypedKindStatus) ([]string, error) {
	params := parametersOf(crd)
	if live == nil || params == nil || !requires(params) {
		return nil, nil
	}
	objs, err := inuse.Objects(ctx, s.kinds, tk)
	if err != nil {
		return nil, err
	}
	values := make([]any, 0, len(objs))
	for _, o := range objs {
		v, _, _ := unstructured.NestedFieldNoCopy(o.Object, "spec", "parameters")
		values = append(values, v)
	}
	out, paths := render.Unrequire(params, values)
	if len(paths) == 0 {
		return nil, nil
	}
	spec := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	spec.Properties["parameters"] = *out
	crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = spec
	return paths, nil
}

// requires reports whether schema s requires a member at any depth.
func requires(s *apiextensionsv1.JSONSchemaProps) bool {
	if len(s.Required) > 0 {
		return true
	}
	for _, p := range s.Properties {
		if requires(&p) {
			return true
		}
	}
	if s.Items != nil && s.Items.Schema != nil && requires(s.Items.Schema) {
		return true
	}
	return s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil && requires(s.AdditionalProperties.Schema)
}

// droppedNote says, to end a condition's message, how many schema
// keywords the CRD of tk does not hold.
func droppedNote(tk *v1alpha1.TypedKindStatus) string {
	if n := len(tk.Dropped) + int(tk.DroppedNotShown); n > 0 {
		return fmt.Sprintf("; %d schema keywords it does not hold are in status.typedKind.dropped (lockstep's webhook checks them)", n)
	}
	return ""
}

// unrequiredOf are the parameters every plan requires that crd does not,
// because objects lack them (AnnotationUnrequired).
func unrequiredOf(crd *apiextensionsv1.CustomResourceDefinition) []string {
	if crd == nil || crd.Annotations[AnnotationUnrequired] == "" {
		return nil
	}
	var paths []string
	if err := json.Unmarshal([]byte(crd.Annotations[AnnotationUnrequired]), &paths); err != nil {
		return nil
	}
	return paths
}

// withUnrequired is dropped with an entry for each parameter of
// unrequired (paths below spec.parameters), and without those of an
// earlier pass.
func withUnrequired(dropped []v1alpha1.DroppedKeyword, unrequired []string) []v1alpha1.DroppedKeyword {
	out := slices.DeleteFunc(slices.Clone(dropped), func(d v1alpha1.DroppedKeyword) bool { return d.Why == unrequiredWhy })
	for _, p := range unrequired {
		path := "spec.parameters." + p
		if strings.HasPrefix(p, "[") {
			path = "spec.parameters" + p
		}
		out = append(out, v1alpha1.DroppedKeyword{Path: path, Keyword: "required", Why: unrequiredWhy})
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// errHeld says that the CRD rendered from the catalog is not applied: it
// drops parameters objects set (kept) and the CRD that keeps them is not
// one to apply, or it changes the type of values objects set (retyped)
// so that the API server would prune their members.
type errHeld struct {
	kept, retyped []string
	why           string
}

func (e *errHeld) Error() string {
	if len(e.retyped) > 0 {
		return e.why
	}
	return fmt.Sprintf("keeping parameters %s: %s", inuse.Some(e.kept, maxObjectsNamed), e.why)
}

// parametersOf is a copy of the schema of spec.parameters of a typed
// kind's CRD; nil when it has none.
func parametersOf(crd *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.JSONSchemaProps {
	if len(crd.Spec.Versions) == 0 || crd.Spec.Versions[0].Schema == nil || crd.Spec.Versions[0].Schema.OpenAPIV3Schema == nil {
		return nil
	}
	params, ok := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["parameters"]
	if !ok {
		return nil
	}
	return params.DeepCopy()
}

// applyable is crd as a server-side apply sends it: no status, no
// creation time.
func applyable(crd *apiextensionsv1.CustomResourceDefinition) (*unstructured.Unstructured, error) {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(crd)
	if err != nil {
		return nil, fmt.Errorf("converting CRD %s: %w", crd.Name, err)
	}
	delete(obj, "status")
	unstructured.RemoveNestedField(obj, "metadata", "creationTimestamp")
	return &unstructured.Unstructured{Object: obj}, nil
}

// refused reports whether err is the API server's refusal of what was
// sent (a 4xx answer other than a conflict or too many requests), as
// opposed to a failure worth trying again.
func refused(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	code := status.Status().Code
	return code >= 400 && code < 500 && code != 409 && code != 429 && code != 408
}

// errNotOurs says that a CRD of the name exists that lockstep did not
// apply.
var errNotOurs = errors.New("the CRD is not lockstep's")

// liveCRD is the CRD of that name that lockstep applied; nil when there is
// none, errNotOurs when there is one lockstep did not apply. It is read
// from the cache, which holds only lockstep's CRDs, and else from the API
// server (a CRD just applied may not be in the cache yet; another one
// never is).
func (s *sync) liveCRD(ctx context.Context, name string) (*apiextensionsv1.CustomResourceDefinition, error) {
	var crd apiextensionsv1.CustomResourceDefinition
	err := s.client.Get(ctx, client.ObjectKey{Name: name}, &crd)
	if apierrors.IsNotFound(err) {
		err = s.reader.Get(ctx, client.ObjectKey{Name: name}, &crd)
	}
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading CRD %s: %w", name, err)
	case crd.Labels[render.LabelManagedBy] != render.ManagedBy:
		return nil, errNotOurs
	}
	return &crd, nil
}

// kindOf is the typed kind of crd, as far as its CRD says.
func kindOf(crd *apiextensionsv1.CustomResourceDefinition) *v1alpha1.TypedKindStatus {
	return &v1alpha1.TypedKindStatus{Kind: crd.Spec.Names.Kind, Plural: crd.Spec.Names.Plural, APIVersion: render.Group + "/" + render.Version, CRDName: crd.Name}
}

// deprecatedOf are the deprecated parameters crd keeps (an annotation
// that is not a JSON array is a list of names separated by commas).
func deprecatedOf(crd *apiextensionsv1.CustomResourceDefinition) []string {
	if crd == nil || crd.Annotations[AnnotationDeprecated] == "" {
		return nil
	}
	var paths []string
	if err := json.Unmarshal([]byte(crd.Annotations[AnnotationDeprecated]), &paths); err != nil {
		return strings.Split(crd.Annotations[AnnotationDeprecated], ",")
	}
	return paths
}

// appliedFrom is what a kind's CRD and roles are applied from.
func appliedFrom(tk *v1alpha1.TypedKindStatus, aggregate bool) string {
	if aggregate {
		return tk.RenderedFrom + "/roles-aggregated"
	}
	return tk.RenderedFrom + "/roles"
}

// failed is what an offering shows when its kind could not be settled:
// the kind as it was, and why; the pass runs again.
func (s *sync) failed(tk *v1alpha1.TypedKindStatus, err error) typedKind {
	s.retry = true
	return typedKind{status: tk, condition: condition(metav1.ConditionFalse, ReasonApplyFailed,
		fmt.Sprintf("kind %s: %v; lockstep tries again", tk.Kind, err))}
}

func withCondition(k typedKind, status metav1.ConditionStatus, reason, msg string) typedKind {
	k.condition = condition(status, reason, msg)
	return k
}

func condition(status metav1.ConditionStatus, reason, msg string) *metav1.Condition {
	return &metav1.Condition{Type: v1alpha1.ConditionTypedKindReady, Status: status, Reason: reason, Message: msg}
}
