package suite

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestIdleBeyond(t *testing.T) {
	rate := &idle{cpu: 10 * time.Millisecond, api: apiRequests{"PUT": 0.5}, over: 20 * time.Second}
	tests := []struct {
		name    string
		idle    *idle
		api     apiRequests
		cpu     time.Duration
		elapsed time.Duration
		wantAPI apiRequests
		wantCPU time.Duration
	}{
		{"idling taken away", rate, apiRequests{"POST": 200, "PUT": 3}, time.Second, 4 * time.Second,
			apiRequests{"POST": 200, "PUT": 1}, 960 * time.Millisecond},
		{"never below nothing", rate, apiRequests{"PUT": 1}, 10 * time.Millisecond, 4 * time.Second,
			apiRequests{}, 0},
		{"not measured: everything counts", nil, apiRequests{"PUT": 3}, time.Second, 4 * time.Second,
			apiRequests{"PUT": 3}, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api, cpu := tt.idle.beyond(tt.api, tt.cpu, tt.elapsed)
			assert.Equal(t, tt.wantAPI, api)
			assert.Equal(t, tt.wantCPU, cpu)
		})
	}
}
