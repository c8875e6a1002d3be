package admission

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// fieldTypes answers a request whose object its handler could not decode
// because a field has the wrong JSON type (a number where the schema says
// string) with a 422 that names the field, as the API server's own
// validation does, instead of the decoder's Go words ("json: cannot
// unmarshal number into Go struct field ..."). It decodes the object again
// only when the handler refused to decode it (400): a request that
// decodes costs nothing more.
type fieldTypes struct {
	admission.Handler
	kind schema.GroupKind
	// new returns an empty object of the kind.
	new func() any
}

// Handle implements admission.Handler.
func (h *fieldTypes) Handle(ctx context.Context, req admission.Request) admission.Response {
	resp := h.Handler.Handle(ctx, req)
	if resp.Allowed || resp.Result == nil || resp.Result.Code != http.StatusBadRequest {
		return resp
	}
	errs := fieldTypeErrors(req.Object.Raw, h.new())
	if len(errs) == 0 {
		return resp
	}
	status := invalid(h.kind, req.Name, errs).ErrStatus
	return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{UID: req.UID, Allowed: false, Result: &status}}
}

// fieldTypeErrors is the field error of a JSON document that does not
// decode into obj because of a value of the wrong type; none otherwise.
func fieldTypeErrors(raw []byte, obj any) field.ErrorList {
	var wrong *json.UnmarshalTypeError
	if err := json.Unmarshal(raw, obj); !errors.As(err, &wrong) || wrong.Field == "" {
		return nil
	}
	parts := strings.Split(wrong.Field, ".")
	return field.ErrorList{field.Invalid(field.NewPath(parts[0], parts[1:]...), wrong.Value, "must be "+jsonType(wrong.Type))}
}

// jsonType names the JSON type a Go type decodes from, for a person.
func jsonType(t reflect.Type) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return "another type"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "another type"
}
