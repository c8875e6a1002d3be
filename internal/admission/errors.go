package admission

import (
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// statusError is a rejection with an HTTP code and a message for a person
// at a terminal; kubectl prints the message after the webhook's name.
func statusError(code int32, reason metav1.StatusReason, format string, args ...any) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    code,
		Reason:  reason,
		Message: fmt.Sprintf(format, args...),
	}}
}

func conflict(format string, args ...any) error {
	return statusError(http.StatusConflict, metav1.StatusReasonConflict, format, args...)
}

func unavailable(format string, args ...any) error {
	return statusError(http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, format, args...)
}

func admissionResponse(code int32, reason metav1.StatusReason, msg string) admissionv1.AdmissionResponse {
	return admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{
		Status: metav1.StatusFailure, Code: code, Reason: reason, Message: msg,
	}}
}
