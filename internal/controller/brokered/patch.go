package brokered

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// patch sends the JSON merge patch data to obj (to its status subresource
// when status is set), asking the API server to answer with the object's
// metadata only, and gives obj the resourceVersion the write made.
//
// The reconcilers write an object's status and finalizer on every change
// of every object. controller-runtime's merge patch encodes the whole
// object twice (managedFields included) to find what changed, and decodes
// the whole object the API server answers; the reconcilers know what they
// change, send only that, and read back only the version.
func patch(ctx context.Context, c client.Client, obj client.Object, data []byte, status bool) error {
	gvk, err := kindOf(c, obj)
	if err != nil {
		return err
	}
	written := &metav1.PartialObjectMetadata{}
	written.SetGroupVersionKind(gvk)
	written.Namespace, written.Name = obj.GetNamespace(), obj.GetName()
	raw := client.RawPatch(types.MergePatchType, data)
	if status {
		err = c.Status().Patch(ctx, written, raw)
	} else {
		err = c.Patch(ctx, written, raw)
	}
	if err != nil {
		return err
	}
	obj.SetResourceVersion(written.ResourceVersion)
	return nil
}

// kindOf is the kind of the object obj stands for: the one its TypeMeta
// names (the model of a typed kind's object names the typed kind), else
// the one the scheme knows its Go type as.
func kindOf(c client.Client, obj client.Object) (schema.GroupVersionKind, error) {
	if gvk := obj.GetObjectKind().GroupVersionKind(); !gvk.Empty() {
		return gvk, nil
	}
	return apiutil.GVKForObject(obj, c.Scheme())
}
