package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cradmission "sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	sigsjson "sigs.k8s.io/json"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

type instance = *v1alpha1.ServiceInstance

// allowAll allows every request without reading the objects.
func allowAll() *cradmission.Webhook {
	return &cradmission.Webhook{Handler: cradmission.HandlerFunc(func(context.Context, cradmission.Request) cradmission.Response {
		return cradmission.Allowed("")
	})}
}

// noopValidator allows everything; wrapped in admission.WithValidator it
// costs what controller-runtime's decoding of old and new costs.
type noopValidator struct{}

func (noopValidator) ValidateCreate(context.Context, instance) (cradmission.Warnings, error) {
	return nil, nil
}

func (noopValidator) ValidateUpdate(context.Context, instance, instance) (cradmission.Warnings, error) {
	return nil, nil
}

func (noopValidator) ValidateDelete(context.Context, instance) (cradmission.Warnings, error) {
	return nil, nil
}

// specFirst decides an UPDATE's request class from the raw specs before
// decoding anything into Go types: an update of an object being deleted,
// or whose spec bytes did not change, needs no typed object at all (the
// API server serializes old and new the same way, so equal specs are equal
// bytes; different bytes fall back to the typed decode). Objects it does
// decode go straight into the Go type with sigs.k8s.io/json, skipping the
// universal deserializer's extra pass to find apiVersion and kind.
type specFirst struct{}

// specAndDeletion is the part of an object the request class needs.
type specAndDeletion struct {
	Metadata struct {
		DeletionTimestamp *metav1.Time `json:"deletionTimestamp"`
	} `json:"metadata"`
	Spec json.RawMessage `json:"spec"`
}

func (specFirst) Handle(_ context.Context, req cradmission.Request) cradmission.Response {
	if req.Operation == admissionv1.Update {
		var old, new specAndDeletion
		if err := decode(req.OldObject.Raw, &old); err != nil {
			return cradmission.Errored(http.StatusBadRequest, err)
		}
		if err := decode(req.Object.Raw, &new); err != nil {
			return cradmission.Errored(http.StatusBadRequest, err)
		}
		if old.Metadata.DeletionTimestamp != nil || bytes.Equal(old.Spec, new.Spec) {
			return cradmission.Allowed("")
		}
	}
	for _, raw := range [][]byte{req.Object.Raw, req.OldObject.Raw} {
		if len(raw) == 0 {
			continue
		}
		var si v1alpha1.ServiceInstance
		if err := decode(raw, &si); err != nil {
			return cradmission.Errored(http.StatusBadRequest, err)
		}
	}
	return cradmission.Allowed("")
}

// decode reads JSON as the API server's serializer does underneath
// (case-sensitive field names, integers kept as int64).
func decode(raw []byte, into any) error {
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, into); err != nil {
		return fmt.Errorf("decoding the object: %w", err)
	}
	return nil
}
