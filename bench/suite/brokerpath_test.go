package suite

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/lockstep-dev/lockstep/bench/report"
)

// The requests target holds to within one request over the step (what
// idling would have sent is estimated from a rate), never one per
// operation.
func TestOperationCostTargetsRequestsResolution(t *testing.T) {
	tests := []struct {
		name     string
		requests float64
		want     report.Status
	}{
		{"five per operation", 550, report.Met},
		{"one renewal over the step", 551, report.Met},
		{"two over the step", 552, report.Missed},
		{"five and a half per operation", 605, report.Missed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := operationCostTargets("provision", apiRequests{"POST": tt.requests}, time.Millisecond, 110)
			assert.Equal(t, tt.want, got[0].Status, got[0].Got)
		})
	}
}
