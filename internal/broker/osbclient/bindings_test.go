package osbclient_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
	"github.com/lockstep-dev/lockstep/internal/broker/osbclient"
)

// secret appears in scripted bind answers and must never reach an error.
const secret = "hunter2-very-secret"

func TestBind(t *testing.T) {
	tests := []struct {
		name        string
		setup       func(b *fakebroker.Broker)
		wantStatus  int
		wantAsync   bool
		wantOp      string
		wantCreds   bool
		wantErr     errCheck
		wantBinding bool
	}{
		{name: "201 created with credentials", wantStatus: 201, wantCreds: true, wantBinding: true},
		{
			name:       "200 identical repeat returns the same credentials",
			setup:      func(b *fakebroker.Broker) { b.PutBinding(existingBinding("i1", "b1")) },
			wantStatus: 200, wantCreds: true, wantBinding: true,
		},
		{
			name: "202 accepted",
			setup: func(b *fakebroker.Broker) {
				b.Script(fakebroker.OpBind, fakebroker.Respond{Async: &fakebroker.Async{Operation: "bind-1"}})
			},
			wantStatus: 202, wantAsync: true, wantOp: "bind-1",
		},
		{
			name: "400 plan not bindable",
			setup: func(b *fakebroker.Broker) {
				inst := existing("i1")
				inst.PlanID = fakebroker.PlanFixedID
				b.PutInstance(inst)
				b.Script(fakebroker.OpBind, fakebroker.Respond{Status: 400, Description: "plan is not bindable"})
			},
			wantErr: errCheck{is: osbclient.IsBadRequest, msg: []string{`broker answered 400: "plan is not bindable" (PUT /v2/service_instances/i1/service_bindings/b1)`}},
		},
		{
			name: "409 exists with different parameters",
			setup: func(b *fakebroker.Broker) {
				bnd := existingBinding("i1", "b1")
				bnd.Parameters = map[string]any{"role": "writer"}
				b.PutBinding(bnd)
			},
			wantErr:     errCheck{is: osbclient.IsConflict},
			wantBinding: true,
		},
		{
			name: "422 RequiresApp",
			setup: func(b *fakebroker.Broker) {
				b.Script(fakebroker.OpBind, fakebroker.Respond{Status: 422, Error: "RequiresApp", Description: "needs an app"})
			},
			wantErr: errCheck{is: osbclient.IsRequiresApp, msg: []string{`422 RequiresApp: "needs an app"`}},
		},
		{
			name: "422 AsyncRequired",
			setup: func(b *fakebroker.Broker) {
				b.Script(fakebroker.OpBind, fakebroker.Respond{Status: 422, Error: "AsyncRequired"})
			},
			wantErr: errCheck{is: osbclient.IsAsyncRequired},
		},
		{
			name: "422 ConcurrencyError",
			setup: func(b *fakebroker.Broker) {
				b.Script(fakebroker.OpBind, fakebroker.Respond{Status: 422, Error: "ConcurrencyError"})
			},
			wantErr: errCheck{is: osbclient.IsConcurrencyError, retryable: true},
		},
		{
			name: "201 with malformed body: orphan mitigation, body never quoted",
			setup: func(b *fakebroker.Broker) {
				b.Script(fakebroker.OpBind, fakebroker.Respond{Status: 201, Apply: true, Body: `{"credentials": {"password": "` + secret + `"`})
			},
			wantErr:     errCheck{is: osbclient.IsMalformed, msg: []string{"status 201, invalid JSON (PUT"}, orphan: true},
			wantBinding: true,
		},
		{
			name: "200 with wrongly typed credentials: body never quoted",
			setup: func(b *fakebroker.Broker) {
				b.Script(fakebroker.OpBind, fakebroker.Respond{Status: 200, Body: `{"credentials": "` + secret + `"}`})
			},
			wantErr: errCheck{is: osbclient.IsMalformed, msg: []string{"status 200, invalid JSON"}},
		},
		{
			name: "500 with a non-JSON body: body never quoted",
			setup: func(b *fakebroker.Broker) {
				b.Script(fakebroker.OpBind, fakebroker.Respond{Status: 500, Body: "password=" + secret})
			},
			wantErr: errCheck{is: isHTTPStatus(500), msg: []string{"broker answered 500 Internal Server Error (PUT"}, orphan: true, retryable: true},
		},
		{
			name:    "connection closed: orphan mitigation",
			setup:   func(b *fakebroker.Broker) { b.Script(fakebroker.OpBind, fakebroker.Respond{CloseConnection: true}) },
			wantErr: errCheck{is: osbclient.IsTransport, orphan: true, retryable: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := fakebroker.New(t)
			b.PutInstance(existing("i1"))
			if tt.setup != nil {
				tt.setup(b)
			}
			c := newClient(t, b)
			resp, err := c.Bind(testCtx(t), meta, bindReq("i1", "b1"))
			tt.wantErr.check(t, err)
			if err != nil {
				assert.NotContains(t, err.Error(), secret)
				assert.NotContains(t, fmt.Sprintf("%+v", err), secret)
			}
			if tt.wantErr.is == nil {
				assert.Equal(t, tt.wantStatus, resp.HTTPStatus)
				assert.Equal(t, tt.wantAsync, resp.Async)
				assert.Equal(t, tt.wantOp, resp.Operation)
			}
			settle(t, b, fakebroker.OpBind, 1)
			held, ok := b.Binding("i1", "b1")
			assert.Equal(t, tt.wantBinding, ok)
			if tt.wantCreds {
				require.NotEmpty(t, resp.Binding.Credentials["password"])
				assert.Equal(t, held.Credentials, resp.Binding.Credentials)
				for _, s := range []string{resp.String(), fmt.Sprintf("%v", resp), fmt.Sprintf("%+v", *resp), fmt.Sprintf("%#v", resp), fmt.Sprint(resp.Binding)} {
					assert.NotContains(t, s, held.Credentials["password"], "credentials never printed")
				}
			}
		})
	}
}

func TestBindRequest(t *testing.T) {
	b := fakebroker.New(t)
	b.PutInstance(existing("i1"))
	c := newClient(t, b)
	req := bindReq("i1", "b1")
	req.BindResource = &osbapi.BindResource{AppGUID: "app-1"}
	_, err := c.Bind(testCtx(t), meta, req)
	require.NoError(t, err)
	call, _ := b.LastCall(fakebroker.OpBind)
	assert.Equal(t, "/v2/service_instances/i1/service_bindings/b1", call.Path)
	assert.Equal(t, "true", call.Query.Get("accepts_incomplete"))
	assert.Equal(t, map[string]any{
		"service_id":    fakebroker.ServiceDBID,
		"plan_id":       fakebroker.PlanSmallID,
		"context":       map[string]any{"platform": "kubernetes", "namespace": "team-a", "clusterid": "cluster-1"},
		"bind_resource": map[string]any{"app_guid": "app-1"},
		"parameters":    map[string]any{"role": "reader"},
	}, call.JSON)

	_, err = c.Bind(testCtx(t), meta, osbclient.BindRequest{InstanceID: "i1", ServiceID: "s", PlanID: "p"})
	require.ErrorIs(t, err, osbclient.ErrInvalidRequest)
	assert.Contains(t, err.Error(), "bind needs a binding ID")
}

func TestUnbind(t *testing.T) {
	tests := []struct {
		name        string
		setup       func(b *fakebroker.Broker)
		wantStatus  int
		wantAsync   bool
		wantGone    bool
		wantErr     errCheck
		wantBinding bool
	}{
		{name: "200 deleted", wantStatus: 200},
		{
			name: "202 accepted",
			setup: func(b *fakebroker.Broker) {
				b.Script(fakebroker.OpUnbind, fakebroker.Respond{Async: &fakebroker.Async{}})
			},
			wantStatus: 202, wantAsync: true, wantBinding: true,
		},
		{name: "410 gone is a success", setup: func(b *fakebroker.Broker) { b.ResetState() }, wantStatus: 410, wantGone: true},
		{
			name: "400",
			setup: func(b *fakebroker.Broker) {
				b.Script(fakebroker.OpUnbind, fakebroker.Respond{Status: 400, Description: "no"})
			},
			wantErr:     errCheck{is: osbclient.IsBadRequest, msg: []string{`"no" (DELETE /v2/service_instances/i1/service_bindings/b1)`}},
			wantBinding: true,
		},
		{
			name: "422 ConcurrencyError",
			setup: func(b *fakebroker.Broker) {
				b.Script(fakebroker.OpUnbind, fakebroker.Respond{Status: 422, Error: "ConcurrencyError"})
			},
			wantErr:     errCheck{is: osbclient.IsConcurrencyError, retryable: true},
			wantBinding: true,
		},
		{
			name:        "500 on unbind needs no orphan mitigation",
			setup:       func(b *fakebroker.Broker) { b.Script(fakebroker.OpUnbind, fakebroker.Respond{Status: 500}) },
			wantErr:     errCheck{is: isHTTPStatus(500), retryable: true},
			wantBinding: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := fakebroker.New(t)
			b.PutInstance(existing("i1"))
			b.PutBinding(existingBinding("i1", "b1"))
			if tt.setup != nil {
				tt.setup(b)
			}
			c := newClient(t, b)
			resp, err := c.Unbind(testCtx(t), meta, osbclient.UnbindRequest{
				InstanceID: "i1", BindingID: "b1", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID,
			})
			tt.wantErr.check(t, err)
			if tt.wantErr.is == nil {
				assert.Equal(t, tt.wantStatus, resp.HTTPStatus)
				assert.Equal(t, tt.wantAsync, resp.Async)
				assert.Equal(t, tt.wantGone, resp.Gone)
			}
			_, ok := b.Binding("i1", "b1")
			assert.Equal(t, tt.wantBinding, ok)
			call, _ := b.LastCall(fakebroker.OpUnbind)
			assert.Equal(t, http.MethodDelete, call.Method)
			assert.Equal(t, "true", call.Query.Get("accepts_incomplete"))
			assert.Equal(t, fakebroker.ServiceDBID, call.Query.Get("service_id"))
			assert.Equal(t, fakebroker.PlanSmallID, call.Query.Get("plan_id"))
		})
	}
}

func TestGetBinding(t *testing.T) {
	tests := []struct {
		name      string
		setup     func(t *testing.T, b *fakebroker.Broker)
		wantCreds map[string]any
		wantErr   errCheck
	}{
		{
			name:      "200 with credentials and parameters",
			setup:     func(t *testing.T, b *fakebroker.Broker) { b.PutBinding(existingBinding("i1", "b1")) },
			wantCreds: map[string]any{"username": "u", "password": "s3cr3t-pw"},
		},
		{
			name:    "404 does not exist",
			wantErr: errCheck{is: osbclient.IsNotFound},
		},
		{
			name: "404 while an async bind is in progress",
			setup: func(t *testing.T, b *fakebroker.Broker) {
				b.Script(fakebroker.OpBind, fakebroker.Respond{Async: &fakebroker.Async{InProgressPolls: 1}})
				_, err := newClient(t, b).Bind(testCtx(t), meta, bindReq("i1", "b1"))
				require.NoError(t, err)
			},
			wantErr: errCheck{is: osbclient.IsNotFound, msg: []string{"still being created"}},
		},
		{
			name: "malformed: body never quoted",
			setup: func(t *testing.T, b *fakebroker.Broker) {
				b.Script(fakebroker.OpGetBinding, fakebroker.Respond{Status: 200, Body: `{"credentials": "` + secret})
			},
			wantErr: errCheck{is: osbclient.IsMalformed, msg: []string{"status 200, invalid JSON (GET /v2/service_instances/i1/service_bindings/b1)"}},
		},
		{
			name: "404 with a non-JSON body: body never quoted",
			setup: func(t *testing.T, b *fakebroker.Broker) {
				b.Script(fakebroker.OpGetBinding, fakebroker.Respond{Status: 404, Body: secret})
			},
			wantErr: errCheck{is: osbclient.IsNotFound, msg: []string{"broker answered 404 Not Found (GET"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := fakebroker.New(t)
			b.PutInstance(existing("i1"))
			if tt.setup != nil {
				tt.setup(t, b)
			}
			c := newClient(t, b)
			got, err := c.GetBinding(testCtx(t), meta, osbclient.GetBindingRequest{InstanceID: "i1", BindingID: "b1"})
			tt.wantErr.check(t, err)
			if err != nil {
				assert.NotContains(t, fmt.Sprintf("%+v", err), secret)
				return
			}
			assert.Equal(t, tt.wantCreds, got.Credentials)
			assert.JSONEq(t, `{"role": "reader"}`, string(got.Parameters))
			assert.NotContains(t, fmt.Sprintf("%v %+v %#v", got, *got, got), "s3cr3t-pw")
		})
	}
}
