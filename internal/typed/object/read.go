package object

import (
	"context"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/typed/render"
)

// KindNamed finds typed kind kind of group among the CRDs reader holds
// (lockstep's, labeled app.kubernetes.io/managed-by=lockstep); false when
// there is none: the kind was deactivated, and its objects are gone.
func KindNamed(ctx context.Context, reader client.Reader, group, kind string) (Kind, bool, error) {
	var crds apiextensionsv1.CustomResourceDefinitionList
	if err := reader.List(ctx, &crds, client.MatchingLabels{render.LabelManagedBy: render.ManagedBy}); err != nil {
		return Kind{}, false, fmt.Errorf("listing the CustomResourceDefinitions of typed kinds: %w", err)
	}
	for i := range crds.Items {
		if k, ok := KindOf(&crds.Items[i]); ok && k.GVK.Group == group && k.GVK.Kind == kind {
			return k, true, nil
		}
	}
	return Kind{}, false, nil
}

// Read reads typed object namespace/name of kind k and returns it with its
// model; nil, nil, nil when reader does not hold it.
func Read(ctx context.Context, reader client.Reader, k Kind, namespace, name string) (*unstructured.Unstructured, *v1alpha1.ServiceInstance, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(k.GVK)
	if err := reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, u); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil, nil
		}
		return nil, nil, err
	}
	si, err := ToInstance(u, k)
	if err != nil {
		return nil, nil, err
	}
	return u, si, nil
}
