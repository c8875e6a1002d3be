package admission

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/metrics"
)

// TestDecisionReasonsTellTheBrokerFromTheUser: a refusal that passes a
// broker's answer on is counted under a reason of its own
// (lockstep_admission_decisions_total), while the requester still reads
// the Kubernetes status the broker's HTTP status maps to: a 422 the
// broker gives on a delete reads Invalid to kubectl, as a user's invalid
// input does, and the two are told apart in the metrics.
func TestDecisionReasonsTellTheBrokerFromTheUser(t *testing.T) {
	refuses422 := behaviour{name: "422, refuses", script: func(b *fakebroker.Broker, op, _ fakebroker.Op) {
		b.Script(op, fakebroker.Respond{Status: http.StatusUnprocessableEntity, Description: "the instance has backups"})
	}}
	stillRunning := behaviour{name: "202, in progress past the budget", budget: 300 * time.Millisecond, script: func(b *fakebroker.Broker, op, _ fakebroker.Op) {
		b.Script(op, fakebroker.Respond{Async: &fakebroker.Async{InProgressPolls: 1000}})
	}}
	tests := []struct {
		verb   v1alpha1.Verb
		broker behaviour
		status metav1.StatusReason // what kubectl reads
		reason string              // what the metrics count
	}{
		{v1alpha1.VerbDeprovision, refuses422, metav1.StatusReasonInvalid, metrics.ReasonBrokerRefused},
		{v1alpha1.VerbProvision, asyncFails, metav1.StatusReasonBadRequest, metrics.ReasonBrokerRefused},
		{v1alpha1.VerbUpdate, concurrency, metav1.StatusReasonConflict, metrics.ReasonBrokerRefused},
		{v1alpha1.VerbProvision, down, metav1.StatusReasonServiceUnavailable, metrics.ReasonBrokerUnavailable},
		{v1alpha1.VerbProvision, hangs, metav1.StatusReasonServiceUnavailable, metrics.ReasonBrokerOutcomeUnknown},
		{v1alpha1.VerbUpdate, pollErrors, metav1.StatusReasonServiceUnavailable, metrics.ReasonBrokerOutcomeUnknown},
		{v1alpha1.VerbDeprovision, stillRunning, metav1.StatusReasonConflict, metrics.ReasonBrokerInProgress},
		{v1alpha1.VerbUnbind, fails, metav1.StatusReasonServiceUnavailable, metrics.ReasonBrokerOutcomeUnknown},
	}
	for _, tt := range tests {
		t.Run(string(tt.verb)+": "+tt.broker.name, func(t *testing.T) {
			v := verbUnderTest(tt.verb)
			h := newHarness(t, v.objects()...)
			v.seed(h.broker)
			if tt.broker.script != nil {
				tt.broker.script(h.broker, v.op, v.poll)
			}
			if tt.broker.budget > 0 {
				h.validator.Budget, h.bindings.Budget = tt.broker.budget, tt.broker.budget
			}
			if tt.broker.unreachable {
				pointAtNobody(t, h)
			}
			err := v.admit(h)
			require.Error(t, err)
			assert.Equal(t, tt.status, apierrors.ReasonForError(err), "what kubectl reads: %v", err)
			assert.Equal(t, tt.reason, metrics.ReasonOf(err), "what the metrics count")
		})
	}

	t.Run("a user's invalid input", func(t *testing.T) {
		h := newHarness(t, instance("small", "", generation(1)))
		_, err := h.admit(admissionv1.Update, instance("small", "", generation(1)), instance("huge", "", generation(2)), false)
		require.Error(t, err)
		assert.Equal(t, metav1.StatusReasonInvalid, apierrors.ReasonForError(err))
		assert.Equal(t, "Invalid", metrics.ReasonOf(err), "lockstep's own check: the Kubernetes reason")
		assert.Empty(t, h.broker.Calls(), "the broker is not asked")
	})
}
