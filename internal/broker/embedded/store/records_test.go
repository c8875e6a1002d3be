package store

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestJobStateFinished(t *testing.T) {
	tests := []struct {
		state JobState
		want  bool
	}{
		{JobPending, false},
		{JobRunning, false},
		{JobSucceeded, true},
		{JobFailed, true},
		{"", false},
	}
	for _, tt := range tests {
		t.Run(string(tt.state), func(t *testing.T) {
			assert.Equal(t, tt.want, tt.state.Finished())
		})
	}
}

// The records are stored as JSON: their field names are the stored
// format, and a zero time that is marked omitzero is left out.
func TestRecordsEncoding(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name   string
		record any
		want   string
	}{
		{"spec not marked", &SpecRecord{ServiceID: "s", Name: "n", Registry: "r", Digest: "d", Bundle: json.RawMessage(`{}`), UpdatedAt: at},
			`{"service_id":"s","name":"n","registry":"r","digest":"d","bundle":{},"updated_at":"2026-01-02T03:04:05Z"}`},
		{"spec marked", &SpecRecord{ServiceID: "s", Bundle: json.RawMessage(`{}`), Marked: true, MarkReason: "gone", MarkedAt: at, UpdatedAt: at},
			`{"service_id":"s","name":"","registry":"","digest":"","bundle":{},"marked":true,"mark_reason":"gone","marked_at":"2026-01-02T03:04:05Z","updated_at":"2026-01-02T03:04:05Z"}`},
		{"gone", &Gone{Job: "j", DeletedAt: at}, `{"job":"j","deleted_at":"2026-01-02T03:04:05Z"}`},
		{"runner", &Runner{ID: "r", Heartbeat: at}, `{"id":"r","heartbeat":"2026-01-02T03:04:05Z"}`},
		{"job not started", &Job{Token: "t", Method: Provision, InstanceID: "i", State: JobPending, CreatedAt: at},
			`{"token":"t","method":"provision","instance_id":"i","state":"pending","request":{"service_id":"","plan_id":""},"created_at":"2026-01-02T03:04:05Z"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := json.Marshal(tt.record)
			require.NoError(t, err)
			assert.JSONEq(t, tt.want, string(raw))
		})
	}
}
