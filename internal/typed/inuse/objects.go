package inuse

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// GVK is the group, version and kind of the typed kind an offering's
// status shows.
func GVK(tk *v1alpha1.TypedKindStatus) schema.GroupVersionKind {
	return schema.FromAPIVersionAndKind(tk.APIVersion, tk.Kind)
}

// Objects lists the objects of the typed kind tk in every namespace. A
// kind the API server does not serve (its CRD not applied yet, or gone)
// has none.
func Objects(ctx context.Context, r client.Reader, tk *v1alpha1.TypedKindStatus) ([]unstructured.Unstructured, error) {
	list := &unstructured.UnstructuredList{}
	gvk := GVK(tk)
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := r.List(ctx, list); err != nil {
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("listing the objects of typed kind %s: %w", tk.Kind, err)
	}
	return list.Items, nil
}

// Names are the objects' namespace/name, sorted.
func Names(objs []unstructured.Unstructured) []string {
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.GetNamespace()+"/"+o.GetName())
	}
	slices.Sort(out)
	return out
}

// Some names at most max of names, and says how many more there are:
// "team/a, team/b and 3 more".
func Some(names []string, max int) string {
	if len(names) <= max {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:max], ", "), len(names)-max)
}

// SetParameters are the properties of spec.parameters that at least one
// of objs sets (top level only).
func SetParameters(objs []unstructured.Unstructured) map[string]bool {
	out := map[string]bool{}
	for _, o := range objs {
		params, _, _ := unstructured.NestedMap(o.Object, "spec", "parameters")
		for k := range params {
			out[k] = true
		}
	}
	return out
}
