package metrics

import (
	"errors"
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestReasonOf(t *testing.T) {
	gr := schema.GroupResource{Group: "lockstep.dev", Resource: "serviceinstances"}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"invalid", apierrors.NewInvalid(schema.GroupKind{Group: "lockstep.dev", Kind: "ServiceInstance"}, "db",
			field.ErrorList{field.Invalid(field.NewPath("spec", "planName"), "x", "unknown plan")}), "Invalid"},
		{"conflict", apierrors.NewConflict(gr, "db", errors.New("lock held")), "Conflict"},
		{"unavailable", apierrors.NewServiceUnavailable("broker down"), "ServiceUnavailable"},
		{"wrapped status", fmt.Errorf("outer: %w", apierrors.NewTimeoutError("slow", 1)), "Timeout"},
		{"status without reason", &apierrors.StatusError{}, "InternalError"},
		{"plain error", errors.New("boom"), "InternalError"},
		{"a broker's answer names its own reason", reasoned{apierrors.NewInvalid(schema.GroupKind{Group: "lockstep.dev", Kind: "ServiceInstance"}, "db", nil), ReasonBrokerRefused}, "BrokerRefused"},
		{"wrapped broker's answer", fmt.Errorf("outer: %w", reasoned{apierrors.NewServiceUnavailable("no answer"), ReasonBrokerOutcomeUnknown}), "BrokerOutcomeUnknown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, ReasonOf(tt.err))
		})
	}
}

// reasoned is a rejection that names its reason label, as admission's
// rejections that pass a broker's answer on do.
type reasoned struct {
	error
	reason string
}

func (r reasoned) DecisionReason() string { return r.reason }
func (r reasoned) Unwrap() error          { return r.error }

func TestAdmissionDecisionCountsByLabels(t *testing.T) {
	tests := []struct {
		kind, operation, result, reason string
		times                           int
	}{
		{"ServiceInstance", "CREATE", Allowed, ReasonBroker, 2},
		{"ServiceInstance", "UPDATE", Denied, "Invalid", 1},
		{"ServiceBinding", "DELETE", Allowed, ReasonDryRun, 3},
		{"ServiceBinding", "UPDATE", Allowed, ReasonUnchanged, 1},
	}
	for _, tt := range tests {
		t.Run(tt.kind+"/"+tt.operation+"/"+tt.reason, func(t *testing.T) {
			c := admissionDecisions.WithLabelValues(tt.kind, tt.operation, tt.result, tt.reason)
			before := testutil.ToFloat64(c)
			for range tt.times {
				AdmissionDecision(tt.kind, tt.operation, tt.result, tt.reason)
			}
			assert.Equal(t, before+float64(tt.times), testutil.ToFloat64(c))
		})
	}
}
