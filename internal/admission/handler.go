package admission

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	sigsjson "sigs.k8s.io/json"

	"github.com/lockstep-dev/lockstep/internal/metrics"
)

// validatingHandler serves a Validator. It does what controller-runtime's
// admission.WithValidator does, in a cheaper order: an UPDATE whose object
// is being deleted, or whose spec bytes did not change, is allowed before
// anything is decoded into a Go type. Those are most of the requests a
// webhook in front of every change sees (labels, annotations, finalizers,
// status-driven retries), so they must cost next to nothing.
//
// The API server serializes the old and the new object the same way, so an
// unchanged spec arrives as equal bytes. Different bytes are not yet a
// change (a number spelled differently, say): they go through the typed
// path, where Validator.SameSpec decides semantically.
//
// Objects are decoded straight into the Go type with sigs.k8s.io/json, as
// the API machinery's JSON serializer does underneath, without its extra
// pass to find apiVersion and kind (the webhook configuration already
// routes one kind to each path), and only in the parts the chain reads:
// metadata without managedFields, and spec. The status is left out: on the
// main resource the API server keeps the persisted status (the status
// subresource is the only way to change it, and the status guard watches
// that), so old and new would carry the same one.
type validatingHandler[T client.Object] struct {
	validator *Validator[T]
	// new returns an empty object of the kind to decode into.
	new func() T
	// parts returns where obj keeps its metadata and its spec.
	parts func(obj T) (*metav1.ObjectMeta, any)
}

// leanMeta is an object's metadata without its managedFields, which no
// check reads and which are often the largest part of the object. The
// outer field wins over the embedded one of the same JSON name.
type leanMeta struct {
	*metav1.ObjectMeta
	ManagedFields json.RawMessage `json:"managedFields"`
}

// objectParts are the parts of an object the validating chain reads.
type objectParts struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        leanMeta        `json:"metadata"`
	Spec            json.RawMessage `json:"spec"`
}

// Handle implements admission.Handler.
func (h *validatingHandler[T]) Handle(ctx context.Context, req admission.Request) admission.Response {
	ctx = admission.NewContextWithRequest(ctx, req)
	var (
		warnings admission.Warnings
		err      error
	)
	switch req.Operation {
	case admissionv1.Create:
		obj, derr := h.decode(req.Object.Raw, "object")
		if derr != nil {
			return admission.Errored(http.StatusBadRequest, derr)
		}
		warnings, err = h.validator.ValidateCreate(ctx, obj)
	case admissionv1.Update:
		old, oldSpec, derr := h.decodeParts(req.OldObject.Raw, "persisted object")
		if derr != nil {
			return admission.Errored(http.StatusBadRequest, derr)
		}
		if old.GetDeletionTimestamp() != nil {
			return h.unchanged(req)
		}
		var changed struct {
			Spec json.RawMessage `json:"spec"`
		}
		if derr := unmarshal(req.Object.Raw, &changed, "object"); derr != nil {
			return admission.Errored(http.StatusBadRequest, derr)
		}
		if len(oldSpec) > 0 && bytes.Equal(oldSpec, changed.Spec) {
			return h.unchanged(req)
		}
		obj, spec, derr := h.decodeParts(req.Object.Raw, "object")
		if derr != nil {
			return admission.Errored(http.StatusBadRequest, derr)
		}
		if derr := h.decodeSpec(old, oldSpec, "persisted object"); derr != nil {
			return admission.Errored(http.StatusBadRequest, derr)
		}
		if derr := h.decodeSpec(obj, spec, "object"); derr != nil {
			return admission.Errored(http.StatusBadRequest, derr)
		}
		warnings, err = h.validator.ValidateUpdate(ctx, old, obj)
	case admissionv1.Delete:
		// The object being deleted is the old object.
		old, derr := h.decode(req.OldObject.Raw, "persisted object")
		if derr != nil {
			return admission.Errored(http.StatusBadRequest, derr)
		}
		warnings, err = h.validator.ValidateDelete(ctx, old)
	case admissionv1.Connect:
		return admission.Allowed("")
	default:
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("unknown operation %q", req.Operation))
	}
	if err != nil {
		var status apierrors.APIStatus
		if errors.As(err, &status) {
			return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{
				Allowed: false, Result: new(status.Status()), Warnings: warnings,
			}}
		}
		return admission.Denied(err.Error()).WithWarnings(warnings...)
	}
	return admission.Allowed("").WithWarnings(warnings...)
}

// unchanged allows an UPDATE that passes through on its raw objects alone:
// the persisted object is being deleted, or the spec bytes are equal. See
// passThrough for why nothing else is looked at then.
func (h *validatingHandler[T]) unchanged(req admission.Request) admission.Response {
	h.validator.count(req.Operation, metrics.ReasonUnchanged, nil)
	return admission.Allowed("")
}

// decode reads the parts of one object of the request the chain reads
// into a new T.
func (h *validatingHandler[T]) decode(raw []byte, what string) (T, error) {
	obj, spec, err := h.decodeParts(raw, what)
	if err != nil {
		return obj, err
	}
	return obj, h.decodeSpec(obj, spec, what)
}

// decodeParts reads an object's kind and metadata into a new T, and returns
// its spec undecoded: one pass over the object, which is all an unchanged
// update needs.
func (h *validatingHandler[T]) decodeParts(raw []byte, what string) (T, json.RawMessage, error) {
	obj := h.new()
	meta, _ := h.parts(obj)
	parts := objectParts{Metadata: leanMeta{ObjectMeta: meta}}
	if err := unmarshal(raw, &parts, what); err != nil {
		return obj, nil, err
	}
	obj.GetObjectKind().SetGroupVersionKind(parts.GroupVersionKind())
	return obj, parts.Spec, nil
}

// decodeSpec reads a spec decodeParts returned into obj.
func (h *validatingHandler[T]) decodeSpec(obj T, spec json.RawMessage, what string) error {
	if len(spec) == 0 {
		return nil
	}
	_, into := h.parts(obj)
	return unmarshal(spec, into, what+"'s spec")
}

// unmarshal decodes JSON as the API machinery's serializer does
// (case-sensitive field names, integers kept as integers).
func unmarshal(raw []byte, into any, what string) error {
	if len(raw) == 0 {
		return fmt.Errorf("the admission request carries no %s", what)
	}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, into); err != nil {
		return fmt.Errorf("decoding the %s in the admission request: %w", what, err)
	}
	return nil
}

// requestLogger is the LogConstructor of lockstep's webhooks. It names the
// request by its UID only: controller-runtime's default adds six fields,
// which its JSON logger encodes on every request although lockstep's
// handlers log through their own loggers and rarely log at all.
func requestLogger(base logr.Logger, req *admission.Request) logr.Logger {
	if req == nil {
		return base
	}
	return base.WithValues("requestID", req.UID)
}
