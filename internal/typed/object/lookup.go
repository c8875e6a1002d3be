package object

import (
	"context"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/typed/render"
)

// KindNamed finds the typed kind named kind among the CRDs lockstep
// rendered that reader holds (those labelled as lockstep's); ok is false
// when there is none.
func KindNamed(ctx context.Context, reader client.Reader, kind string) (_ Kind, ok bool, _ error) {
	var crds apiextensionsv1.CustomResourceDefinitionList
	if err := reader.List(ctx, &crds, client.MatchingLabels{render.LabelManagedBy: render.ManagedBy}); err != nil {
		return Kind{}, false, fmt.Errorf("reading the definitions of typed kinds: %w", err)
	}
	for i := range crds.Items {
		crd := &crds.Items[i]
		if crd.Spec.Group == render.Group && crd.Spec.Names.Kind == kind {
			k, ok := KindOf(crd)
			return k, ok, nil
		}
	}
	return Kind{}, false, nil
}

// Get reads the object key names of the typed kind named kind, as the
// model (ToInstance). A kind lockstep does not serve is NotFound, as an
// object that does not exist is.
func Get(ctx context.Context, reader client.Reader, kind string, key client.ObjectKey) (*v1alpha1.ServiceInstance, error) {
	k, ok, err := KindNamed(ctx, reader, kind)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: render.Group, Resource: kind}, key.Name)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(k.GVK)
	if err := reader.Get(ctx, key, u); err != nil {
		return nil, err
	}
	return ToInstance(u, k)
}

// Instance reads the instance key names: a ServiceInstance when kind is
// empty, else an object of the typed kind named kind, as the model.
func Instance(ctx context.Context, reader client.Reader, kind string, key client.ObjectKey) (*v1alpha1.ServiceInstance, error) {
	if kind != "" {
		return Get(ctx, reader, kind, key)
	}
	si := &v1alpha1.ServiceInstance{}
	if err := reader.Get(ctx, key, si); err != nil {
		return nil, err
	}
	return si, nil
}
