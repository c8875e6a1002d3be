package broker_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/internal/broker"
	"github.com/lockstep-dev/lockstep/internal/broker/brokertest"
)

func TestInstanceLastOperation(t *testing.T) {
	tests := []struct {
		name    string
		answer  brokertest.Respond
		want    *broker.LastOperation
		wantErr errCheck
	}{
		{
			name:   "200 in progress",
			answer: brokertest.Respond{Status: 200, Body: `{"state": "in progress", "description": "copying"}`},
			want:   &broker.LastOperation{HTTPStatus: 200, State: broker.StateInProgress, Description: "copying"},
		},
		{
			name:   "200 succeeded",
			answer: brokertest.Respond{Status: 200, Body: `{"state": "succeeded"}`},
			want:   &broker.LastOperation{HTTPStatus: 200, State: broker.StateSucceeded},
		},
		{
			name:   "200 failed with instance_usable and update_repeatable",
			answer: brokertest.Respond{Status: 200, Body: `{"state": "failed", "description": "disk full", "instance_usable": true, "update_repeatable": true}`},
			want: &broker.LastOperation{
				HTTPStatus: 200, State: broker.StateFailed, Description: "disk full",
				InstanceUsable: ptr(true), UpdateRepeatable: ptr(true),
			},
		},
		{
			name:   "Retry-After in seconds",
			answer: brokertest.Respond{Status: 200, Body: `{"state": "in progress"}`, Header: http.Header{"Retry-After": {"7"}}},
			want:   &broker.LastOperation{HTTPStatus: 200, State: broker.StateInProgress, RetryAfter: 7 * time.Second},
		},
		{
			name:   "Retry-After that cannot be read is ignored",
			answer: brokertest.Respond{Status: 200, Body: `{"state": "in progress"}`, Header: http.Header{"Retry-After": {"soon"}}},
			want:   &broker.LastOperation{HTTPStatus: 200, State: broker.StateInProgress},
		},
		{
			name:   "410 gone",
			answer: brokertest.Respond{Status: 410},
			want:   &broker.LastOperation{HTTPStatus: 410, Gone: true},
		},
		{
			name:    "400",
			answer:  brokertest.Respond{Status: 400, Description: "unknown operation"},
			wantErr: errCheck{is: broker.IsBadRequest, msg: []string{`"unknown operation" (GET /v2/service_instances/i1/last_operation)`}},
		},
		{
			name:    "404",
			answer:  brokertest.Respond{Status: 404},
			wantErr: errCheck{is: broker.IsNotFound},
		},
		{
			name:    "unknown state",
			answer:  brokertest.Respond{Status: 200, Body: `{"state": "pending"}`},
			wantErr: errCheck{is: broker.IsMalformed, msg: []string{`state "pending" is not one of "in progress", "succeeded", "failed"`}},
		},
		{
			name:    "malformed",
			answer:  brokertest.Respond{Status: 200, Malformed: true},
			wantErr: errCheck{is: broker.IsMalformed},
		},
		{
			name:    "500 is retryable",
			answer:  brokertest.Respond{Status: 500},
			wantErr: errCheck{is: isHTTPStatus(500), retryable: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := brokertest.New(t)
			b.Script(brokertest.OpInstanceLastOperation, tt.answer)
			c := newClient(t, b)
			got, err := c.InstanceLastOperation(testCtx(t), meta, broker.InstanceLastOperationRequest{
				InstanceID: "i1", ServiceID: brokertest.ServiceDBID, PlanID: brokertest.PlanSmallID, Operation: "op-9",
			})
			tt.wantErr.check(t, err)
			assert.Equal(t, tt.want, got)
			call, _ := b.LastCall(brokertest.OpInstanceLastOperation)
			assert.Equal(t, "/v2/service_instances/i1/last_operation", call.Path)
			assert.Equal(t, "op-9", call.Query.Get("operation"))
			assert.Equal(t, brokertest.ServiceDBID, call.Query.Get("service_id"))
			assert.Equal(t, brokertest.PlanSmallID, call.Query.Get("plan_id"))
			assert.False(t, call.Query.Has("accepts_incomplete"))
		})
	}
}

func TestRetryAfterHTTPDate(t *testing.T) {
	b := brokertest.New(t)
	when := time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)
	b.Script(brokertest.OpInstanceLastOperation, brokertest.Respond{
		Status: 200, Body: `{"state": "in progress"}`, Header: http.Header{"Retry-After": {when}},
	})
	got, err := newClient(t, b).InstanceLastOperation(testCtx(t), meta, broker.InstanceLastOperationRequest{InstanceID: "i1"})
	require.NoError(t, err)
	// An HTTP date has one-second resolution: anything from 58 minutes on
	// shows the date was read.
	assert.Greater(t, got.RetryAfter, 58*time.Minute)
	assert.LessOrEqual(t, got.RetryAfter, time.Hour)
}

func TestBindingLastOperation(t *testing.T) {
	b := brokertest.New(t)
	b.PutInstance(existing("i1"))
	b.Script(brokertest.OpBind, brokertest.Respond{Async: &brokertest.Async{
		Operation: "bind-op", InProgressPolls: 1, ProgressDescription: "creating user",
	}})
	c := newClient(t, b)
	resp, err := c.Bind(testCtx(t), meta, bindReq("i1", "b1"))
	require.NoError(t, err)
	require.True(t, resp.Async)

	req := broker.BindingLastOperationRequest{InstanceID: "i1", BindingID: "b1", Operation: resp.Operation}
	got, err := c.BindingLastOperation(testCtx(t), meta, req)
	require.NoError(t, err)
	assert.Equal(t, &broker.LastOperation{HTTPStatus: 200, State: broker.StateInProgress, Description: "creating user"}, got)

	got, err = c.BindingLastOperation(testCtx(t), meta, req)
	require.NoError(t, err)
	assert.Equal(t, broker.StateSucceeded, got.State)

	call, _ := b.LastCall(brokertest.OpBindingLastOperation)
	assert.Equal(t, "/v2/service_instances/i1/service_bindings/b1/last_operation", call.Path)
	assert.Equal(t, "bind-op", call.Query.Get("operation"))

	bnd, err := c.GetBinding(testCtx(t), meta, broker.GetBindingRequest{InstanceID: "i1", BindingID: "b1"})
	require.NoError(t, err)
	assert.NotEmpty(t, bnd.Credentials["password"])
}

func ptr[T any](v T) *T { return &v }
