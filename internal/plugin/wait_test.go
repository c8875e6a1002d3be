package plugin

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

func TestProgress(t *testing.T) {
	inProgress := &v1alpha1.LastOperation{Verb: v1alpha1.VerbProvision, State: v1alpha1.StateInProgress, OperationName: "db-provision-1a2b3c4d", Description: "creating"}
	tests := []struct {
		name       string
		last       *v1alpha1.LastOperation
		conditions []metav1.Condition
		want       string
	}{
		{name: "nothing reported yet", want: ""},
		{name: "done", last: &v1alpha1.LastOperation{Verb: v1alpha1.VerbProvision, State: v1alpha1.StateSucceeded},
			conditions: []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Provisioned"}}, want: ""},
		{name: "in progress, no condition yet", last: inProgress,
			want: "provision in progress (BrokerOperation db-provision-1a2b3c4d): creating"},
		{name: "in progress, with kstatus conditions", last: inProgress, conditions: []metav1.Condition{
			{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: "Provisioning"},
			{Type: "Reconciling", Status: metav1.ConditionTrue, Reason: "OperationInProgress"},
			{Type: "Stalled", Status: metav1.ConditionFalse},
			{Type: v1alpha1.ConditionInSync, Status: metav1.ConditionUnknown, Reason: "OutcomeUnknown"},
		}, want: "provision in progress (BrokerOperation db-provision-1a2b3c4d): creating; Ready False (Provisioning); Reconciling True (OperationInProgress); InSync Unknown (OutcomeUnknown)"},
		{name: "reconciling before the operation is reported", conditions: []metav1.Condition{{Type: "Reconciling", Status: metav1.ConditionTrue, Reason: "Provisioning"}},
			want: "Reconciling True (Provisioning)"},
		{name: "an update in progress on a Ready instance", last: &v1alpha1.LastOperation{Verb: v1alpha1.VerbUpdate, State: v1alpha1.StateInProgress},
			conditions: []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue}}, want: "update in progress"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, progress(brokered{last: tt.last, conditions: tt.conditions}))
		})
	}
}

func TestFlightText(t *testing.T) {
	op := func(phase v1alpha1.OperationPhase, description string, note *v1alpha1.InSyncNote) *v1alpha1.BrokerOperation {
		o := &v1alpha1.BrokerOperation{ObjectMeta: metav1.ObjectMeta{Name: "db-provision-1a2b3c4d"}}
		o.Spec.Verb, o.Status.Phase, o.Status.Description, o.Status.TargetInSync = v1alpha1.VerbProvision, phase, description, note
		return o
	}
	tests := []struct {
		name string
		op   *v1alpha1.BrokerOperation
		want string
	}{
		{name: "written, the broker not answered yet", op: op(v1alpha1.PhasePending, "", nil), want: "provision pending (BrokerOperation db-provision-1a2b3c4d)"},
		{name: "in progress at the broker", op: op(v1alpha1.PhaseInProgress, "creating", nil), want: "provision in progress (BrokerOperation db-provision-1a2b3c4d): creating"},
		{name: "an outcome not known yet", op: op(v1alpha1.PhaseInProgress, "", &v1alpha1.InSyncNote{Status: metav1.ConditionUnknown, Reason: "OutcomeUnknown"}),
			want: "provision in progress (BrokerOperation db-provision-1a2b3c4d); InSync Unknown (OutcomeUnknown)"},
		{name: "done at the broker, the commit to come", op: op(v1alpha1.PhaseSucceeded, "", nil), want: "provision succeeded, to be committed (BrokerOperation db-provision-1a2b3c4d)"},
		{name: "committed", op: op(v1alpha1.PhaseCommitted, "", nil), want: ""},
		{name: "failed", op: op(v1alpha1.PhaseFailed, "no capacity", nil), want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, flightText(tt.op))
		})
	}
}
