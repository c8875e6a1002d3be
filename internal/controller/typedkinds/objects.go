package typedkinds

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/typed/object"
)

// The instance reconciler reads and writes the objects of a typed kind as
// the model, a ServiceInstance whose TypeMeta is the typed kind (see
// internal/typed/object): a reader and a client that convert at read and
// write time stand in for the ones it is given. Every other object (the
// journal's records, Secrets) passes through as it is.

// reader reads the objects of kind from typed, converted to the model;
// anything else from Reader.
type reader struct {
	client.Reader
	typed client.Reader
	kind  object.Kind
}

// model returns obj as the model when it is one of kind's objects.
func (r reader) model(obj client.Object) (*v1alpha1.ServiceInstance, bool) {
	si, ok := obj.(*v1alpha1.ServiceInstance)
	return si, ok && si.GroupVersionKind() == r.kind.GVK
}

// empty is an object of kind to read into.
func (r reader) empty() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(r.kind.GVK)
	return u
}

// into converts u, one of kind's objects, into si.
func (r reader) into(u *unstructured.Unstructured, si *v1alpha1.ServiceInstance) error {
	m, err := object.ToInstance(u, r.kind)
	if err != nil {
		return fmt.Errorf("reading %s %s/%s: %w", r.kind.GVK.Kind, u.GetNamespace(), u.GetName(), err)
	}
	*si = *m
	return nil
}

func (r reader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	si, ok := r.model(obj)
	if !ok {
		return r.Reader.Get(ctx, key, obj, opts...)
	}
	u := r.empty()
	if err := r.typed.Get(ctx, key, u, opts...); err != nil {
		return err
	}
	return r.into(u, si)
}

// writer is a client that reads as reader does and writes the metadata
// and status of kind's objects from the model; anything else goes to
// Client as it is.
type writer struct {
	client.Client
	reader
}

func (w writer) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return w.reader.Get(ctx, key, obj, opts...)
}

func (w writer) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return w.reader.List(ctx, list, opts...)
}

// Patch patches the metadata of one of kind's objects as the model says
// (the reconciler's finalizer).
func (w writer) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	si, ok := w.model(obj)
	if !ok {
		return w.Client.Patch(ctx, obj, patch, opts...)
	}
	return w.patch(ctx, si, patch, func(u *unstructured.Unstructured, p client.Patch) error { return w.Client.Patch(ctx, u, p, opts...) })
}

func (w writer) Status() client.SubResourceWriter {
	return statusWriter{SubResourceWriter: w.Client.Status(), w: w}
}

// patch sends patch, computed on the model si, to the typed object with
// send, and reads the object the API server answered back into si. The
// model and the typed object have the same metadata and status, not the
// same spec: a patch of the spec is refused, never sent.
func (w writer) patch(ctx context.Context, si *v1alpha1.ServiceInstance, patch client.Patch, send func(*unstructured.Unstructured, client.Patch) error) error {
	data, err := patch.Data(si)
	if err != nil {
		return err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return fmt.Errorf("patching %s %s/%s: %w", w.kind.GVK.Kind, si.Namespace, si.Name, err)
	}
	for name := range fields {
		if name != "metadata" && name != "status" {
			return fmt.Errorf("patching %s %s/%s: lockstep's controllers write its metadata and status only, not %q", w.kind.GVK.Kind, si.Namespace, si.Name, name)
		}
	}
	u := w.empty()
	u.SetNamespace(si.Namespace)
	u.SetName(si.Name)
	if err := send(u, client.RawPatch(patch.Type(), data)); err != nil {
		return err
	}
	return w.into(u, si)
}

// statusWriter writes the status of kind's objects from the model.
type statusWriter struct {
	client.SubResourceWriter
	w writer
}

func (s statusWriter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	si, ok := s.w.model(obj)
	if !ok {
		return s.SubResourceWriter.Patch(ctx, obj, patch, opts...)
	}
	return s.w.patch(ctx, si, patch, func(u *unstructured.Unstructured, p client.Patch) error {
		return s.SubResourceWriter.Patch(ctx, u, p, opts...)
	})
}
