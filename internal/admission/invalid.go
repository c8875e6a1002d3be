package admission

import (
	"net/http"
	"slices"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// invalid returns the 422 that apierrors.NewInvalid returns, to the byte
// (TestInvalidIsNewInvalid), rendering each error's body once:
// NewInvalid renders every body twice (once for its cause, once for the
// message) and removes duplicates through sets and fmt. A refused
// create-only change is answered with this error, on the hot path.
func invalid(kind schema.GroupKind, name string, errs field.ErrorList) *apierrors.StatusError {
	causes := make([]metav1.StatusCause, len(errs))
	// messages are the errors' texts ("field: body"), each once, in order.
	messages := make([]string, 0, len(errs))
	for i, e := range errs {
		body := e.ErrorBody()
		causes[i] = metav1.StatusCause{Type: metav1.CauseType(e.Type), Message: body, Field: e.Field}
		if msg := e.Field + ": " + body; !slices.Contains(messages, msg) {
			messages = append(messages, msg)
		}
	}
	var message strings.Builder
	message.WriteString(kind.String())
	message.WriteByte(' ')
	message.WriteString(strconv.Quote(name))
	message.WriteString(" is invalid")
	switch len(messages) {
	case 0:
	case 1:
		message.WriteString(": ")
		message.WriteString(messages[0])
	default:
		message.WriteString(": [")
		message.WriteString(strings.Join(messages, ", "))
		message.WriteByte(']')
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusUnprocessableEntity,
		Reason:  metav1.StatusReasonInvalid,
		Message: message.String(),
		Details: &metav1.StatusDetails{Group: kind.Group, Kind: kind.Kind, Name: name, Causes: causes},
	}}
}
