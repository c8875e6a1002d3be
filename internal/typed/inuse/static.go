package inuse

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// Static is a dynamic client that serves fixed lists of objects by
// resource, and answers NotFound for any other resource, as the API server
// does for a kind it does not serve. It lists only; it is for the tests of
// what calls Objects.
type Static map[schema.GroupVersionResource][]unstructured.Unstructured

var _ dynamic.Interface = Static{}

// Resource implements dynamic.Interface.
func (s Static) Resource(gvr schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	return staticResource{objects: s, gvr: gvr}
}

type staticResource struct {
	dynamic.NamespaceableResourceInterface // every other method panics
	objects                                Static
	gvr                                    schema.GroupVersionResource
}

func (r staticResource) List(context.Context, metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	items, ok := r.objects[r.gvr]
	if !ok {
		return nil, apierrors.NewNotFound(r.gvr.GroupResource(), "")
	}
	return &unstructured.UnstructuredList{Items: items}, nil
}
