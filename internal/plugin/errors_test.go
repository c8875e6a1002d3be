package plugin

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TestFormatError: errors read as kubectl prints them.
func TestFormatError(t *testing.T) {
	kind := schema.GroupKind{Group: "lockstep.dev", Kind: "ServiceInstance"}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"a webhook's refusal", apierrors.NewServiceUnavailable(`admission webhook "x" denied the request: broker down`),
			`Error from server (ServiceUnavailable): admission webhook "x" denied the request: broker down`},
		{"wrapped", fmt.Errorf("creating: %w", apierrors.NewConflict(schema.GroupResource{Resource: "serviceinstances"}, "db", errors.New("busy"))),
			`Error from server (Conflict): Operation cannot be fulfilled on serviceinstances "db": busy`},
		{"invalid, one field", apierrors.NewInvalid(kind, "db", field.ErrorList{field.Invalid(field.NewPath("spec", "planName"), "x", "no such plan")}),
			`The ServiceInstance "db" is invalid: spec.planName: Invalid value: "x": no such plan`},
		{"invalid, two fields", apierrors.NewInvalid(kind, "db", field.ErrorList{
			field.Invalid(field.NewPath("spec", "a"), 1, "too small"), field.Forbidden(field.NewPath("spec", "b"), "create-only")}),
			"The ServiceInstance \"db\" is invalid: \n* spec.a: Invalid value: 1: too small\n* spec.b: Forbidden: create-only"},
		{"invalid without details: a broker's 422", &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 422,
			Reason: metav1.StatusReasonInvalid, Message: `admission webhook "x" denied the request: broker refused`}},
			`The request is invalid: admission webhook "x" denied the request: broker refused`},
		{"not from the server", errors.New("no plan"), "error: no plan"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, FormatError(tt.err))
		})
	}
}
