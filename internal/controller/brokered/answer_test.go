package brokered

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// A new object's status waits for the broker's answer in its record, so
// that its first status write says it; an old object, or one with an
// answer, is written at once.
func TestAwaitingAnswer(t *testing.T) {
	now := time.Now()
	record := func(phase v1alpha1.OperationPhase) v1alpha1.BrokerOperation {
		return v1alpha1.BrokerOperation{Status: v1alpha1.BrokerOperationStatus{Phase: phase}}
	}
	tests := []struct {
		name      string
		age       time.Duration
		records   []v1alpha1.BrokerOperation
		wantWait  bool
		wantAfter time.Duration
	}{
		{"new, no record yet", time.Second, nil, true, answerWait - time.Second},
		{"new, its record written without the answer yet", time.Second, []v1alpha1.BrokerOperation{record("")}, true, answerWait - time.Second},
		{"new, answered", time.Second, []v1alpha1.BrokerOperation{record(""), record(v1alpha1.PhaseCommitted)}, false, 0},
		{"new, a success not committed yet", time.Second, []v1alpha1.BrokerOperation{record(v1alpha1.PhaseSucceeded)}, true, answerWait - time.Second},
		{"new, failed", time.Second, []v1alpha1.BrokerOperation{record(v1alpha1.PhaseFailed)}, false, 0},
		{"old, a success not committed yet", time.Hour, []v1alpha1.BrokerOperation{record(v1alpha1.PhaseSucceeded)}, false, 0},
		{"new, the broker still at work", time.Second, []v1alpha1.BrokerOperation{record(v1alpha1.PhaseInProgress)}, false, 0},
		{"created past admission: no record after the wait", answerWait, nil, false, 0},
		{"an object of long ago", time.Hour, nil, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := &v1alpha1.ServiceBinding{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(now.Add(-tt.age))}}
			waiting, after := awaitingAnswer(obj, tt.records, now)
			assert.Equal(t, tt.wantWait, waiting)
			assert.Equal(t, tt.wantAfter, after)
		})
	}
}
