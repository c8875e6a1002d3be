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
// routes one kind to each path).
type validatingHandler[T client.Object] struct {
	validator *Validator[T]
	// new returns an empty object of the kind to decode into.
	new func() T
}

// specAndDeletion is all of an object the pass-through decision reads.
type specAndDeletion struct {
	Metadata struct {
		DeletionTimestamp *metav1.Time `json:"deletionTimestamp"`
	} `json:"metadata"`
	Spec json.RawMessage `json:"spec"`
}

// Handle implements admission.Handler.
func (h *validatingHandler[T]) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation == admissionv1.Update {
		unchanged, err := unchangedUpdate(req)
		if err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		if unchanged {
			metrics.AdmissionDecision(h.validator.Kind.Kind, string(req.Operation), metrics.Allowed, metrics.ReasonUnchanged)
			return admission.Allowed("")
		}
	}

	ctx = admission.NewContextWithRequest(ctx, req)
	var (
		warnings admission.Warnings
		err      error
	)
	switch req.Operation {
	case admissionv1.Create:
		obj, derr := h.decode(req.Object.Raw)
		if derr != nil {
			return admission.Errored(http.StatusBadRequest, derr)
		}
		warnings, err = h.validator.ValidateCreate(ctx, obj)
	case admissionv1.Update:
		obj, derr := h.decode(req.Object.Raw)
		if derr != nil {
			return admission.Errored(http.StatusBadRequest, derr)
		}
		old, derr := h.decode(req.OldObject.Raw)
		if derr != nil {
			return admission.Errored(http.StatusBadRequest, derr)
		}
		warnings, err = h.validator.ValidateUpdate(ctx, old, obj)
	case admissionv1.Delete:
		// The object being deleted is the old object.
		old, derr := h.decode(req.OldObject.Raw)
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

// unchangedUpdate reports whether an UPDATE passes through on its raw
// objects alone: the persisted object is being deleted, or the spec bytes
// are equal. See passThrough for why nothing else is looked at then.
func unchangedUpdate(req admission.Request) (bool, error) {
	var old, cur specAndDeletion
	if err := unmarshal(req.OldObject.Raw, &old, "persisted object"); err != nil {
		return false, err
	}
	if old.Metadata.DeletionTimestamp != nil {
		return true, nil
	}
	if err := unmarshal(req.Object.Raw, &cur, "object"); err != nil {
		return false, err
	}
	return len(old.Spec) > 0 && bytes.Equal(old.Spec, cur.Spec), nil
}

// decode reads one object of the request into a new T.
func (h *validatingHandler[T]) decode(raw []byte) (T, error) {
	obj := h.new()
	return obj, unmarshal(raw, obj, "object")
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
