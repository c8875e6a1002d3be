package instance

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/journal"
)

func rec(name string, verb v1alpha1.Verb, phase v1alpha1.OperationPhase, spec v1alpha1.ServiceInstanceSpec, at time.Time) v1alpha1.BrokerOperation {
	t := metav1.NewTime(at)
	return v1alpha1.BrokerOperation{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team", CreationTimestamp: t},
		Spec: v1alpha1.BrokerOperationSpec{BrokerName: "acme", PlanID: "plan-id", Verb: verb, SpecHash: journal.SpecHash(spec), Generation: 2,
			Requester: v1alpha1.Requester{Username: "alice"}},
		Status: v1alpha1.BrokerOperationStatus{Phase: phase, StartTime: &t, CompletionTime: &t, DashboardURL: "https://dash"},
	}
}

// TestStatusFromTheJournal: the instance's status says what its records
// say, once per answer, so that what resync found later stays.
func TestStatusFromTheJournal(t *testing.T) {
	spec := v1alpha1.ServiceInstanceSpec{BrokerName: "acme", ServiceName: "db", PlanName: "small", ExternalID: "ext-1",
		Parameters: &runtime.RawExtension{Raw: json.RawMessage(`{"a":1}`)}}
	si := &v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "team", Generation: 2}, Spec: spec}
	now := time.Now()
	unknown := &v1alpha1.InSyncNote{Status: metav1.ConditionUnknown, Reason: "OutcomeUnknown", Message: "connection reset"}

	t.Run("a committed provision: ready, in sync, what was applied", func(t *testing.T) {
		status := &v1alpha1.ServiceInstanceStatus{}
		provision := rec("db-provision-1", v1alpha1.VerbProvision, v1alpha1.PhaseCommitted, spec, now)
		records := []v1alpha1.BrokerOperation{provision}
		Kind{}.FromJournal(si, status, records)
		assert.True(t, meta.IsStatusConditionTrue(status.Conditions, v1alpha1.ConditionReady))
		assert.Equal(t, "Committed", meta.FindStatusCondition(status.Conditions, v1alpha1.ConditionInSync).Reason)
		assert.Equal(t, "db-provision-1", status.LastOperation.OperationName)
		assert.Equal(t, v1alpha1.StateSucceeded, status.LastOperation.State)
		assert.Equal(t, "https://dash", status.DashboardURL)
		assert.Equal(t, int64(2), status.ObservedGeneration)
		require.NotNil(t, status.LastApplied)
		assert.Equal(t, "plan-id", status.LastApplied.PlanID)
		assert.JSONEq(t, `{"a":1}`, string(status.LastApplied.Parameters.Raw))

		// Resync found drift since; the same record does not undo that.
		meta.SetStatusCondition(&status.Conditions, metav1.Condition{Type: v1alpha1.ConditionInSync, Status: metav1.ConditionFalse, Reason: "PlanDrift"})
		Kind{}.FromJournal(si, status, records)
		assert.Equal(t, "PlanDrift", meta.FindStatusCondition(status.Conditions, v1alpha1.ConditionInSync).Reason)
	})

	t.Run("a commit the status never reported, answered before a failed update: reported", func(t *testing.T) {
		status := &v1alpha1.ServiceInstanceStatus{}
		provision := rec("db-provision-1", v1alpha1.VerbProvision, v1alpha1.PhaseCommitted, spec, now)
		provision.Spec.Generation = 1
		failed := rec("db-update-2", v1alpha1.VerbUpdate, v1alpha1.PhaseFailed, spec, now.Add(time.Second))
		Kind{}.FromJournal(si, status, []v1alpha1.BrokerOperation{provision, failed})
		assert.True(t, meta.IsStatusConditionTrue(status.Conditions, v1alpha1.ConditionReady), "the provision is reported")
		assert.True(t, meta.IsStatusConditionTrue(status.Conditions, v1alpha1.ConditionInSync))
		require.NotNil(t, status.LastApplied, "resync has something to compare with")
		assert.Equal(t, int64(1), status.ObservedGeneration)
		assert.Equal(t, "db-update-2", status.LastOperation.OperationName, "the last operation is the failed update")
		assert.Equal(t, v1alpha1.StateFailed, status.LastOperation.State)

		// Resync found drift since: the provision is not reported again.
		meta.SetStatusCondition(&status.Conditions, metav1.Condition{Type: v1alpha1.ConditionInSync, Status: metav1.ConditionFalse, Reason: "PlanDrift"})
		Kind{}.FromJournal(si, status, []v1alpha1.BrokerOperation{provision, failed})
		assert.Equal(t, "PlanDrift", meta.FindStatusCondition(status.Conditions, v1alpha1.ConditionInSync).Reason)
	})

	t.Run("an operation whose outcome is not known yet", func(t *testing.T) {
		status := &v1alpha1.ServiceInstanceStatus{}
		provision := rec("db-provision-1", v1alpha1.VerbProvision, v1alpha1.PhaseCommitted, spec, now)
		update := rec("db-update-2", v1alpha1.VerbUpdate, v1alpha1.PhaseInProgress, spec, now.Add(time.Minute))
		update.Status.TargetInSync = unknown
		records := []v1alpha1.BrokerOperation{update, provision}
		Kind{}.FromJournal(si, status, records)
		c := meta.FindStatusCondition(status.Conditions, v1alpha1.ConditionInSync)
		assert.Equal(t, metav1.ConditionUnknown, c.Status)
		assert.Equal(t, "connection reset", c.Message)
		assert.Equal(t, "db-provision-1", status.LastOperation.OperationName, "the last answered operation")
	})

	t.Run("a failed update the broker did not carry out", func(t *testing.T) {
		status := &v1alpha1.ServiceInstanceStatus{}
		update := rec("db-update-2", v1alpha1.VerbUpdate, v1alpha1.PhaseFailed, spec, now)
		update.Status.TargetInSync = &v1alpha1.InSyncNote{Status: metav1.ConditionTrue, Reason: "BrokerRefused", Message: "kept"}
		records := []v1alpha1.BrokerOperation{update}
		Kind{}.FromJournal(si, status, records)
		assert.Equal(t, v1alpha1.StateFailed, status.LastOperation.State)
		assert.Equal(t, "BrokerRefused", meta.FindStatusCondition(status.Conditions, v1alpha1.ConditionInSync).Reason)
		assert.Nil(t, meta.FindStatusCondition(status.Conditions, v1alpha1.ConditionReady), "a failure does not make it ready")
		assert.Nil(t, status.LastApplied)
	})

	t.Run("a compensated operation, once", func(t *testing.T) {
		status := &v1alpha1.ServiceInstanceStatus{}
		update := rec("db-update-2", v1alpha1.VerbUpdate, v1alpha1.PhaseCompensated, spec, now)
		update.Status.TargetInSync = &v1alpha1.InSyncNote{Status: metav1.ConditionTrue, Reason: "Compensated", Message: "re-applied"}
		records := []v1alpha1.BrokerOperation{update}
		Kind{}.FromJournal(si, status, records)
		assert.Equal(t, "Compensated", meta.FindStatusCondition(status.Conditions, v1alpha1.ConditionInSync).Reason)
		meta.SetStatusCondition(&status.Conditions, metav1.Condition{Type: v1alpha1.ConditionInSync, Status: metav1.ConditionFalse,
			Reason: "ParametersDrift", LastTransitionTime: metav1.NewTime(now.Add(time.Hour))})
		Kind{}.FromJournal(si, status, records)
		assert.Equal(t, "ParametersDrift", meta.FindStatusCondition(status.Conditions, v1alpha1.ConditionInSync).Reason, "what resync found later stays")
	})
}
