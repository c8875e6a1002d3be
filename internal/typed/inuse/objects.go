package inuse

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// Resource is the resource of the typed kind an offering's status shows.
func Resource(tk *v1alpha1.TypedKindStatus) schema.GroupVersionResource {
	return schema.FromAPIVersionAndKind(tk.APIVersion, tk.Kind).GroupVersion().WithResource(tk.Plural)
}

// Objects lists the objects of the typed kind tk in every namespace, by
// its resource (no REST mapping, which may lag behind a CRD just applied
// and would then say the kind has no objects). A kind the API server does
// not serve (its CRD not applied yet, or gone) has none.
func Objects(ctx context.Context, c dynamic.Interface, tk *v1alpha1.TypedKindStatus) ([]unstructured.Unstructured, error) {
	list, err := c.Resource(Resource(tk)).List(ctx, metav1.ListOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
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

// Parameters are the spec.parameters of those of objs that set them, as
// they hold them: what the kind's schema must keep (see render.Keep).
func Parameters(objs []unstructured.Unstructured) []any {
	var out []any
	for _, o := range objs {
		if params, ok, _ := unstructured.NestedFieldNoCopy(o.Object, "spec", "parameters"); ok && params != nil {
			out = append(out, params)
		}
	}
	return out
}
