package journal

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

func answeredRecord(name string, phase v1alpha1.OperationPhase, done time.Time, version string) v1alpha1.BrokerOperation {
	t := metav1.NewTime(done)
	return v1alpha1.BrokerOperation{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: version, CreationTimestamp: t},
		Status: v1alpha1.BrokerOperationStatus{Phase: phase, CompletionTime: &t}}
}

func TestAnswered(t *testing.T) {
	second := time.Now().Truncate(time.Second)
	tests := []struct {
		name    string
		records []v1alpha1.BrokerOperation
		want    string
	}{
		{name: "none"},
		{name: "only records still under way", records: []v1alpha1.BrokerOperation{answeredRecord("a", v1alpha1.PhaseInProgress, second, "1")}},
		{name: "the later completion", want: "db-provision-b", records: []v1alpha1.BrokerOperation{
			answeredRecord("db-update-a", v1alpha1.PhaseCommitted, second, "9"), answeredRecord("db-provision-b", v1alpha1.PhaseFailed, second.Add(time.Second), "5")}},
		{name: "the same second: the one the API server wrote last", want: "db-deprovision-x", records: []v1alpha1.BrokerOperation{
			answeredRecord("db-provision-z", v1alpha1.PhaseCommitted, second, "10"), answeredRecord("db-deprovision-x", v1alpha1.PhaseFailed, second, "12")}},
		{name: "compensated records are not reported as answers", want: "a", records: []v1alpha1.BrokerOperation{
			answeredRecord("a", v1alpha1.PhaseCommitted, second, "1"), answeredRecord("b", v1alpha1.PhaseCompensated, second.Add(time.Minute), "2")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Answered(tt.records)
			if tt.want == "" {
				assert.Nil(t, got)
				return
			}
			require.NotNil(t, got)
			assert.Equal(t, tt.want, got.Name)
		})
	}
}

func TestApplyNotesFromARecordUnderWay(t *testing.T) {
	second := metav1.NewTime(time.Now().Truncate(time.Second))
	committed := answeredRecord("db-provision-z", v1alpha1.PhaseCommitted, second.Time, "10")
	underWay := answeredRecord("db-deprovision-a", v1alpha1.PhaseInProgress, second.Time, "11")
	underWay.Status.TargetInSync = &v1alpha1.InSyncNote{Status: metav1.ConditionUnknown, Reason: "OutcomeUnknown", Message: "EOF"}
	conds := []metav1.Condition{{Type: v1alpha1.ConditionInSync, Status: metav1.ConditionTrue, Reason: "Committed"}}
	ApplyNotes(&conds, &committed, false, []v1alpha1.BrokerOperation{committed, underWay})
	c := meta.FindStatusCondition(conds, v1alpha1.ConditionInSync)
	assert.Equal(t, metav1.ConditionUnknown, c.Status, "a record under way speaks, whatever its name or second")
	assert.Equal(t, "EOF", c.Message)
}
