package object

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/typed/render"
)

// Instance reads the instance key names: a ServiceInstance when kind is
// empty, else the model of the object of the typed kind named kind (see
// Read). A typed kind lockstep does not serve is NotFound, as an object
// that does not exist is.
func Instance(ctx context.Context, reader client.Reader, kind string, key client.ObjectKey) (*v1alpha1.ServiceInstance, error) {
	if kind == "" {
		si := &v1alpha1.ServiceInstance{}
		if err := reader.Get(ctx, key, si); err != nil {
			return nil, err
		}
		return si, nil
	}
	notFound := apierrors.NewNotFound(schema.GroupResource{Group: render.Group, Resource: kind}, key.Name)
	k, ok, err := KindNamed(ctx, reader, render.Group, kind)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, notFound
	}
	_, si, err := Read(ctx, reader, k, key.Namespace, key.Name)
	if err != nil {
		return nil, err
	}
	if si == nil {
		return nil, notFound
	}
	return si, nil
}
