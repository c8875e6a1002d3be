package admission

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lockstep-dev/lockstep/internal/metrics"
)

// validatingHandler is the admission.Handler that serves a Validator inside
// controller-runtime's admission.Webhook. It does what
// admission.WithValidator's handler does, on the request's raw objects and
// in a cheaper order: an UPDATE whose object is being deleted, or whose spec
// bytes did not change, is allowed before anything is decoded into a Go
// type. Those are the requests that reach lockstep without a change to
// judge (the webhook configuration's matchConditions keep most of them at
// the API server; a client that calls lockstep directly, or an API server
// without them, still sends them), so they must cost next to nothing.
//
// The API server serializes the old and the new object the same way, so an
// unchanged spec arrives as equal bytes. Different bytes are not yet a
// change (a number spelled differently, say): they go through the typed
// path, where Validator.SameSpec decides semantically.
//
// Objects are cut into their parts in one pass that decodes nothing
// (split.go), and only the parts the chain reads are decoded: metadata
// without managedFields, and spec, straight into the Go type with
// sigs.k8s.io/json, as the API machinery's JSON serializer does underneath,
// without its extra pass to find apiVersion and kind (the webhook
// configuration routes one kind to each path). The status is left out: on
// the main resource the API server keeps the persisted status (the status
// subresource is the only way to change it, and the status guard watches
// that), so old and new would carry the same one. BenchmarkValidatingHandler
// compares this handler with admission.WithValidator's.
type validatingHandler[T client.Object] struct {
	validator *Validator[T]
	// new returns an empty object of the kind to decode into.
	new func() T
	// parts returns where obj keeps its metadata and its spec.
	parts func(obj T) (*metav1.ObjectMeta, any)
	// model, when set, returns the request with its objects replaced by
	// the models the chain works on (an object of a typed kind mapped to
	// its instance: typed.go), or the answer to give at once. It runs
	// after an UPDATE with nothing to judge was let through.
	model func(ctx context.Context, req admission.Request) (admission.Request, *admission.Response)
}

var _ admission.Handler = &validatingHandler[client.Object]{}

// Handle implements admission.Handler.
func (h *validatingHandler[T]) Handle(ctx context.Context, req admission.Request) admission.Response {
	ctx = admission.NewContextWithRequest(ctx, req)
	if ownPreflight(req, h.validator.Self) {
		// lockstep's own dry run of the change it is deciding: that
		// change was checked already.
		h.validator.count(ctx, req.Operation, metrics.ReasonPreflight, nil)
		return admission.Allowed("")
	}
	object, err := split(req.Object.Raw, "object")
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	oldObject, err := split(req.OldObject.Raw, "persisted object")
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	var (
		warnings admission.Warnings
		answer   *admission.Response
	)
	switch req.Operation {
	case admissionv1.Create:
		if object, _, answer = h.modelOf(ctx, req, object, oldObject); answer != nil {
			return *answer
		}
		obj, derr := h.decode(object, "object")
		if derr != nil {
			return admission.Errored(http.StatusBadRequest, derr)
		}
		warnings, err = h.validator.ValidateCreate(ctx, obj)
	case admissionv1.Update:
		old, derr := h.decodeMeta(oldObject, "persisted object")
		if derr != nil {
			return admission.Errored(http.StatusBadRequest, derr)
		}
		if old.GetDeletionTimestamp() != nil {
			return h.unchanged(ctx, req)
		}
		if object == nil {
			return admission.Errored(http.StatusBadRequest, errors.New("the admission request carries no object"))
		}
		if oldSpec, ok := oldObject.Spec.single(); ok {
			if spec, ok := object.Spec.single(); ok && bytes.Equal(oldSpec, spec) {
				return h.unchanged(ctx, req)
			}
		}
		if object, oldObject, answer = h.modelOf(ctx, req, object, oldObject); answer != nil {
			return *answer
		}
		obj, derr := h.decode(object, "object")
		if derr != nil {
			return admission.Errored(http.StatusBadRequest, derr)
		}
		if derr := h.decodeSpec(old, oldObject, "persisted object"); derr != nil {
			return admission.Errored(http.StatusBadRequest, derr)
		}
		warnings, err = h.validator.ValidateUpdate(ctx, old, obj)
	case admissionv1.Delete:
		// The object being deleted is the old object.
		if _, oldObject, answer = h.modelOf(ctx, req, object, oldObject); answer != nil {
			return *answer
		}
		old, derr := h.decode(oldObject, "persisted object")
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
		return refusal(err, warnings)
	}
	return admission.Allowed("").WithWarnings(warnings...)
}

// refusal answers a request with err: its own status when it has one.
func refusal(err error, warnings admission.Warnings) admission.Response {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{
			Allowed: false, Result: new(status.Status()), Warnings: warnings,
		}}
	}
	return admission.Denied(err.Error()).WithWarnings(warnings...)
}

// modelOf returns the request's objects as the chain reads them: as they
// came, or, with h.model, their models cut into parts; or the answer to
// give at once.
func (h *validatingHandler[T]) modelOf(ctx context.Context, req admission.Request, object, oldObject *splitObject) (*splitObject, *splitObject, *admission.Response) {
	if h.model == nil {
		return object, oldObject, nil
	}
	modelReq, answer := h.model(ctx, req)
	if answer != nil {
		return nil, nil, answer
	}
	var err error
	if object, err = split(modelReq.Object.Raw, "object"); err != nil {
		return nil, nil, new(admission.Errored(http.StatusInternalServerError, err))
	}
	if oldObject, err = split(modelReq.OldObject.Raw, "persisted object"); err != nil {
		return nil, nil, new(admission.Errored(http.StatusInternalServerError, err))
	}
	return object, oldObject, nil
}

// unchanged allows an UPDATE that passes through on its raw objects alone:
// the persisted object is being deleted, or the spec bytes are equal. See
// passThrough for why nothing else is looked at then.
func (h *validatingHandler[T]) unchanged(ctx context.Context, req admission.Request) admission.Response {
	h.validator.count(ctx, req.Operation, metrics.ReasonUnchanged, nil)
	return admission.Allowed("")
}

// decodeMeta decodes an object's kind and metadata into a new T.
func (h *validatingHandler[T]) decodeMeta(o *splitObject, what string) (T, error) {
	obj := h.new()
	if o == nil {
		return obj, fmt.Errorf("the admission request carries no %s", what)
	}
	tm, om, err := o.meta(what)
	if err != nil {
		return obj, err
	}
	obj.GetObjectKind().SetGroupVersionKind(tm.GroupVersionKind())
	meta, _ := h.parts(obj)
	*meta = om
	return obj, nil
}

// decodeSpec reads an object's spec into obj.
func (h *validatingHandler[T]) decodeSpec(obj T, o *splitObject, what string) error {
	_, into := h.parts(obj)
	return o.Spec.decode(into, what+"'s spec")
}

// decode reads the parts of one object the chain reads into a new T.
func (h *validatingHandler[T]) decode(o *splitObject, what string) (T, error) {
	obj, err := h.decodeMeta(o, what)
	if err != nil {
		return obj, err
	}
	return obj, h.decodeSpec(obj, o, what)
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
