package admission

import (
	"context"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// Defaulter is the mutating handler for one kind. It implements
// controller-runtime's admission.Defaulter[T], served by
// admission.WithDefaulter, which decodes the request's object and answers
// with the JSON patch from it to the defaulted one.
//
// On CREATE it fills in defaults, adds the lockstep.dev/broker finalizer
// and labels the object v1alpha1.DefaultedLabel. On UPDATE (the API server
// sends only those of objects without the label) it keeps defaulted fields
// a request left empty (so that a `kubectl replace` without them does not
// look like a change), restores the finalizer and the label, unless the
// object is being deleted: then it changes nothing, so that finalizer
// removal is never undone.
type Defaulter[T client.Object] struct {
	// New returns an empty object of the kind, to decode the old object into.
	New func() T
	// Defaults fills in the defaults of a new object.
	Defaults func(ctx context.Context, obj T) error
	// Keep copies defaulted fields that obj left empty from old.
	Keep func(old, obj T)
	// decoder decodes the persisted object of an UPDATE as
	// admission.WithDefaulter decodes the request's object; set by
	// defaulterWebhook.
	decoder admission.Decoder
}

var _ admission.Defaulter[client.Object] = &Defaulter[client.Object]{}

// Default implements admission.Defaulter.
func (d *Defaulter[T]) Default(ctx context.Context, obj T) error {
	req, err := admission.RequestFromContext(ctx)
	if err != nil {
		return fmt.Errorf("no admission request in context: %w", err)
	}
	switch req.Operation {
	case admissionv1.Create:
		controllerutil.AddFinalizer(obj, v1alpha1.Finalizer)
		labelDefaulted(obj)
		return d.Defaults(ctx, obj)
	case admissionv1.Update:
		if obj.GetDeletionTimestamp() != nil {
			return nil
		}
		if d.decoder == nil {
			return fmt.Errorf("no decoder for the persisted object: serve the defaulter with defaulterWebhook")
		}
		old := d.New()
		if err := d.decoder.DecodeRaw(req.OldObject, old); err != nil {
			return fmt.Errorf("decoding the persisted object: %w", err)
		}
		if old.GetDeletionTimestamp() != nil {
			return nil
		}
		controllerutil.AddFinalizer(obj, v1alpha1.Finalizer)
		labelDefaulted(obj)
		d.Keep(old, obj)
	}
	return nil
}

// labelDefaulted labels obj as defaulted (v1alpha1.DefaultedLabel).
func labelDefaulted(obj client.Object) {
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[v1alpha1.DefaultedLabel] = "true"
	obj.SetLabels(labels)
}
