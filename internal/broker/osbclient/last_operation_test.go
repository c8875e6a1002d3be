package osbclient_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
	"github.com/lockstep-dev/lockstep/internal/broker/osbclient"
)

func TestInstanceLastOperation(t *testing.T) {
	tests := []struct {
		name    string
		answer  fakebroker.Respond
		want    *osbclient.LastOperation
		wantErr errCheck
	}{
		{
			name:   "200 in progress",
			answer: fakebroker.Respond{Status: 200, Body: `{"state": "in progress", "description": "copying"}`},
			want:   &osbclient.LastOperation{HTTPStatus: 200, State: osbapi.StateInProgress, Description: "copying"},
		},
		{
			name:   "200 succeeded",
			answer: fakebroker.Respond{Status: 200, Body: `{"state": "succeeded"}`},
			want:   &osbclient.LastOperation{HTTPStatus: 200, State: osbapi.StateSucceeded},
		},
		{
			name:   "200 failed with instance_usable and update_repeatable",
			answer: fakebroker.Respond{Status: 200, Body: `{"state": "failed", "description": "disk full", "instance_usable": true, "update_repeatable": true}`},
			want: &osbclient.LastOperation{
				HTTPStatus: 200, State: osbapi.StateFailed, Description: "disk full",
				InstanceUsable: ptr(true), UpdateRepeatable: ptr(true),
			},
		},
		{
			name:   "Retry-After in seconds",
			answer: fakebroker.Respond{Status: 200, Body: `{"state": "in progress"}`, Header: http.Header{"Retry-After": {"7"}}},
			want:   &osbclient.LastOperation{HTTPStatus: 200, State: osbapi.StateInProgress, RetryAfter: 7 * time.Second},
		},
		{
			name:   "Retry-After that cannot be read is ignored",
			answer: fakebroker.Respond{Status: 200, Body: `{"state": "in progress"}`, Header: http.Header{"Retry-After": {"soon"}}},
			want:   &osbclient.LastOperation{HTTPStatus: 200, State: osbapi.StateInProgress},
		},
		{
			name:   "410 gone",
			answer: fakebroker.Respond{Status: 410},
			want:   &osbclient.LastOperation{HTTPStatus: 410, Gone: true},
		},
		{
			name:    "400",
			answer:  fakebroker.Respond{Status: 400, Description: "unknown operation"},
			wantErr: errCheck{is: osbclient.IsBadRequest, msg: []string{`"unknown operation" (GET /v2/service_instances/i1/last_operation)`}},
		},
		{
			name:    "404",
			answer:  fakebroker.Respond{Status: 404},
			wantErr: errCheck{is: osbclient.IsNotFound},
		},
		{
			name:    "unknown state",
			answer:  fakebroker.Respond{Status: 200, Body: `{"state": "pending"}`},
			wantErr: errCheck{is: osbclient.IsMalformed, msg: []string{`state "pending" is not one of "in progress", "succeeded", "failed"`}},
		},
		{
			name:    "malformed",
			answer:  fakebroker.Respond{Status: 200, Malformed: true},
			wantErr: errCheck{is: osbclient.IsMalformed},
		},
		{
			name:    "500 is retryable",
			answer:  fakebroker.Respond{Status: 500},
			wantErr: errCheck{is: isHTTPStatus(500), retryable: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := fakebroker.New(t)
			b.Script(fakebroker.OpInstanceLastOperation, tt.answer)
			c := newClient(t, b)
			got, err := c.InstanceLastOperation(testCtx(t), meta, osbclient.InstanceLastOperationRequest{
				InstanceID: "i1", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID, Operation: "op-9",
			})
			tt.wantErr.check(t, err)
			assert.Equal(t, tt.want, got)
			call, _ := b.LastCall(fakebroker.OpInstanceLastOperation)
			assert.Equal(t, "/v2/service_instances/i1/last_operation", call.Path)
			assert.Equal(t, "op-9", call.Query.Get("operation"))
			assert.Equal(t, fakebroker.ServiceDBID, call.Query.Get("service_id"))
			assert.Equal(t, fakebroker.PlanSmallID, call.Query.Get("plan_id"))
			assert.False(t, call.Query.Has("accepts_incomplete"))
		})
	}
}

func TestRetryAfterHTTPDate(t *testing.T) {
	b := fakebroker.New(t)
	when := time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)
	b.Script(fakebroker.OpInstanceLastOperation, fakebroker.Respond{
		Status: 200, Body: `{"state": "in progress"}`, Header: http.Header{"Retry-After": {when}},
	})
	got, err := newClient(t, b).InstanceLastOperation(testCtx(t), meta, osbclient.InstanceLastOperationRequest{InstanceID: "i1"})
	require.NoError(t, err)
	// An HTTP date has one-second resolution: anything from 58 minutes on
	// shows the date was read.
	assert.Greater(t, got.RetryAfter, 58*time.Minute)
	assert.LessOrEqual(t, got.RetryAfter, time.Hour)
}

func TestBindingLastOperation(t *testing.T) {
	b := fakebroker.New(t)
	b.PutInstance(existing("i1"))
	b.Script(fakebroker.OpBind, fakebroker.Respond{Async: &fakebroker.Async{
		Operation: "bind-op", InProgressPolls: 1, ProgressDescription: "creating user",
	}})
	c := newClient(t, b)
	resp, err := c.Bind(testCtx(t), meta, bindReq("i1", "b1"))
	require.NoError(t, err)
	require.True(t, resp.Async)

	req := osbclient.BindingLastOperationRequest{InstanceID: "i1", BindingID: "b1", Operation: resp.Operation}
	got, err := c.BindingLastOperation(testCtx(t), meta, req)
	require.NoError(t, err)
	assert.Equal(t, &osbclient.LastOperation{HTTPStatus: 200, State: osbapi.StateInProgress, Description: "creating user"}, got)

	got, err = c.BindingLastOperation(testCtx(t), meta, req)
	require.NoError(t, err)
	assert.Equal(t, osbapi.StateSucceeded, got.State)

	call, _ := b.LastCall(fakebroker.OpBindingLastOperation)
	assert.Equal(t, "/v2/service_instances/i1/service_bindings/b1/last_operation", call.Path)
	assert.Equal(t, "bind-op", call.Query.Get("operation"))

	bnd, err := c.GetBinding(testCtx(t), meta, osbclient.GetBindingRequest{InstanceID: "i1", BindingID: "b1"})
	require.NoError(t, err)
	assert.NotEmpty(t, bnd.Credentials["password"])
}

func ptr[T any](v T) *T { return &v }
