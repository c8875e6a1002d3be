package osbclient_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
	"github.com/lockstep-dev/lockstep/internal/broker/osbclient"
)

func TestProvision(t *testing.T) {
	tests := []struct {
		name         string
		setup        func(b *fakebroker.Broker)
		timeout      time.Duration
		wantStatus   int
		wantAsync    bool
		wantOp       string
		wantErr      errCheck
		wantInstance bool // the broker holds the instance afterwards
	}{
		{name: "201 created", wantStatus: 201, wantInstance: true},
		{
			name:       "200 already exists, identical",
			setup:      func(b *fakebroker.Broker) { b.PutInstance(existing("i1")) },
			wantStatus: 200, wantInstance: true,
		},
		{
			name: "202 accepted with operation",
			setup: func(b *fakebroker.Broker) {
				b.Script(fakebroker.OpProvision, fakebroker.Respond{Async: &fakebroker.Async{Operation: "op-a"}})
			},
			wantStatus: 202, wantAsync: true, wantOp: "op-a",
		},
		{
			name: "202 accepted without operation",
			setup: func(b *fakebroker.Broker) {
				b.Script(fakebroker.OpProvision, fakebroker.Respond{Async: &fakebroker.Async{OmitOperation: true}})
			},
			wantStatus: 202, wantAsync: true,
		},
		{
			name: "400 bad request",
			setup: func(b *fakebroker.Broker) {
				b.Script(fakebroker.OpProvision, fakebroker.Respond{Status: 400, Description: "storageGB must be at most 1024"})
			},
			wantErr: errCheck{is: osbclient.IsBadRequest, msg: []string{`broker answered 400: "storageGB must be at most 1024" (PUT /v2/service_instances/i1)`}},
		},
		{
			name: "409 exists with different attributes",
			setup: func(b *fakebroker.Broker) {
				inst := existing("i1")
				inst.Parameters = map[string]any{"storageGB": float64(20)}
				b.PutInstance(inst)
			},
			wantErr:      errCheck{is: osbclient.IsConflict, msg: []string{"broker answered 409", "different attributes"}},
			wantInstance: true,
		},
		{
			name: "422 AsyncRequired",
			setup: func(b *fakebroker.Broker) {
				b.Script(fakebroker.OpProvision, fakebroker.Respond{Status: 422, Error: "AsyncRequired", Description: "only async"})
			},
			wantErr: errCheck{is: osbclient.IsAsyncRequired, msg: []string{`422 AsyncRequired: "only async"`}},
		},
		{
			name: "422 MaintenanceInfoConflict",
			setup: func(b *fakebroker.Broker) {
				b.Script(fakebroker.OpProvision, fakebroker.Respond{Status: 422, Error: "MaintenanceInfoConflict"})
			},
			wantErr: errCheck{is: osbclient.IsMaintenanceInfoConflict, msg: []string{"broker answered 422 MaintenanceInfoConflict (PUT"}},
		},
		{
			name: "422 ConcurrencyError is retryable",
			setup: func(b *fakebroker.Broker) {
				b.Script(fakebroker.OpProvision, fakebroker.Respond{Status: 422, Error: "ConcurrencyError", Description: "another operation is in progress"})
			},
			wantErr: errCheck{
				is:        osbclient.IsConcurrencyError,
				msg:       []string{`broker answered 422 ConcurrencyError: "another operation is in progress" (PUT /v2/service_instances/i1)`},
				retryable: true,
			},
		},
		{
			name: "500 needs orphan mitigation",
			setup: func(b *fakebroker.Broker) {
				b.Script(fakebroker.OpProvision, fakebroker.Respond{Status: 500, Description: "database exploded", Apply: true})
			},
			wantErr:      errCheck{is: isHTTPStatus(500), msg: []string{"broker answered 500", "database exploded"}, orphan: true, retryable: true},
			wantInstance: true,
		},
		{
			name:    "408 needs orphan mitigation",
			setup:   func(b *fakebroker.Broker) { b.Script(fakebroker.OpProvision, fakebroker.Respond{Status: 408}) },
			wantErr: errCheck{is: isHTTPStatus(408), msg: []string{"broker answered 408 Request Timeout"}, orphan: true, retryable: true},
		},
		{
			name: "502 with a non-JSON body quotes its start",
			setup: func(b *fakebroker.Broker) {
				b.Script(fakebroker.OpProvision, fakebroker.Respond{Status: 502, Body: "<html>Bad Gateway</html>"})
			},
			wantErr: errCheck{is: isHTTPStatus(502), msg: []string{`broker answered 502: "<html>Bad Gateway</html>"`}, orphan: true, retryable: true},
		},
		{
			name: "201 with malformed body needs orphan mitigation",
			setup: func(b *fakebroker.Broker) {
				b.Script(fakebroker.OpProvision, fakebroker.Respond{Status: 201, Malformed: true, Apply: true})
			},
			wantErr: errCheck{
				is:     osbclient.IsMalformed,
				msg:    []string{"broker's answer was malformed: status 201, invalid JSON", `body begins "{\"this is\": not json`},
				orphan: true,
			},
			wantInstance: true,
		},
		{
			name: "200 with malformed body needs no orphan mitigation",
			setup: func(b *fakebroker.Broker) {
				b.Script(fakebroker.OpProvision, fakebroker.Respond{Status: 200, Malformed: true})
			},
			wantErr: errCheck{is: osbclient.IsMalformed, msg: []string{"status 200, invalid JSON"}},
		},
		{
			name: "202 with malformed body needs orphan mitigation",
			setup: func(b *fakebroker.Broker) {
				b.Script(fakebroker.OpProvision, fakebroker.Respond{Status: 202, Malformed: true})
			},
			wantErr: errCheck{is: osbclient.IsMalformed, msg: []string{"status 202"}, orphan: true},
		},
		{
			name:    "other 2xx is unexpected and needs orphan mitigation",
			setup:   func(b *fakebroker.Broker) { b.Script(fakebroker.OpProvision, fakebroker.Respond{Status: 204}) },
			wantErr: errCheck{is: osbclient.IsMalformed, msg: []string{"unexpected status 204 No Content for provision"}, orphan: true},
		},
		{
			name: "redirect is not followed",
			setup: func(b *fakebroker.Broker) {
				b.Script(fakebroker.OpProvision, fakebroker.Respond{Status: 307, Header: http.Header{"Location": {"http://127.0.0.1:1/elsewhere"}}})
			},
			wantErr: errCheck{is: osbclient.IsMalformed, msg: []string{"unexpected status 307"}},
		},
		{
			name:    "no answer within the timeout needs orphan mitigation",
			setup:   func(b *fakebroker.Broker) { b.Script(fakebroker.OpProvision, fakebroker.Respond{Hang: true}) },
			timeout: 50 * time.Millisecond,
			wantErr: errCheck{
				is:     osbclient.IsTimeout,
				msg:    []string{"broker did not answer (PUT /v2/service_instances/i1): the request reached it, then no answer within 50ms"},
				orphan: true, retryable: true,
			},
		},
		{
			name: "slow answer after the broker did the work leaves an orphan",
			setup: func(b *fakebroker.Broker) {
				b.Script(fakebroker.OpProvision, fakebroker.Respond{Delay: time.Hour})
			},
			timeout:      50 * time.Millisecond,
			wantErr:      errCheck{is: osbclient.IsTimeout, orphan: true, retryable: true},
			wantInstance: true,
		},
		{
			name: "connection closed without answer needs orphan mitigation",
			setup: func(b *fakebroker.Broker) {
				b.Script(fakebroker.OpProvision, fakebroker.Respond{CloseConnection: true})
			},
			wantErr: errCheck{is: osbclient.IsTransport, msg: []string{"broker's answer was cut off (PUT /v2/service_instances/i1): the request reached it"}, orphan: true, retryable: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := fakebroker.New(t)
			if tt.setup != nil {
				tt.setup(b)
			}
			c := newClient(t, b, func(cfg *osbclient.Config) {
				if tt.timeout != 0 {
					cfg.Timeout = tt.timeout
				}
			})
			resp, err := c.Provision(testCtx(t), meta, provisionReq("i1"))
			tt.wantErr.check(t, err)
			if tt.wantErr.is == nil {
				assert.Equal(t, tt.wantStatus, resp.HTTPStatus)
				assert.Equal(t, tt.wantAsync, resp.Async)
				assert.Equal(t, tt.wantOp, resp.Operation)
				assert.Equal(t, tt.wantStatus == 200, resp.AlreadyExisted())
				if !tt.wantAsync {
					assert.Equal(t, b.URL()+"/dashboard/i1", resp.DashboardURL)
				}
			}
			settle(t, b, fakebroker.OpProvision, 1)
			_, held := b.Instance("i1")
			assert.Equal(t, tt.wantInstance, held, "broker holds the instance")
			assert.Equal(t, 1, b.Count(fakebroker.OpProvision), "exactly one request")
		})
	}
}

func isHTTPStatus(status int) func(error) bool {
	return func(err error) bool {
		h, ok := osbclient.AsHTTPError(err)
		return ok && h.StatusCode == status
	}
}

func TestProvisionRequest(t *testing.T) {
	b := fakebroker.New(t)
	c := newClient(t, b)
	req := provisionReq("inst/with space")
	req.MaintenanceInfo = &osbapi.MaintenanceInfo{Version: "1.0.0"}
	_, err := c.Provision(testCtx(t), meta, req)
	require.NoError(t, err)

	call, ok := b.LastCall(fakebroker.OpProvision)
	require.True(t, ok)
	assert.Equal(t, http.MethodPut, call.Method)
	assert.Equal(t, "/v2/service_instances/inst/with space", call.Path)
	assert.Equal(t, "inst/with space", call.InstanceID)
	assert.Equal(t, "true", call.Query.Get("accepts_incomplete"))
	assert.Equal(t, "application/json", call.Header.Get("Content-Type"))
	assert.Equal(t, map[string]any{
		"service_id": fakebroker.ServiceDBID,
		"plan_id":    fakebroker.PlanSmallID,
		"context": map[string]any{
			"platform": "kubernetes", "namespace": "team-a", "clusterid": "cluster-1", "instance_name": "orders",
		},
		"organization_guid": "cluster-1",
		"space_guid":        osbapi.Context{ClusterID: "cluster-1", Namespace: "team-a"}.SpaceGUID(),
		"parameters":        map[string]any{"storageGB": float64(10), "region": "eu"},
		"maintenance_info":  map[string]any{"version": "1.0.0"},
	}, call.JSON, "organization_guid and space_guid are required by the specification: the cluster's id and the namespace's GUID")
}

func TestOrganizationAndSpaceGUIDs(t *testing.T) {
	a := osbapi.Context{ClusterID: "cluster-1", Namespace: "team-a"}
	assert.Equal(t, "cluster-1", a.OrganizationGUID(), "the cluster's id is the organization")
	assert.Equal(t, a.SpaceGUID(), osbapi.Context{ClusterID: "cluster-1", Namespace: "team-a", InstanceName: "x"}.SpaceGUID(),
		"one namespace is one space, whatever the instance")
	assert.NotEqual(t, a.SpaceGUID(), osbapi.Context{ClusterID: "cluster-1", Namespace: "team-b"}.SpaceGUID(), "namespaces differ")
	assert.NotEqual(t, a.SpaceGUID(), osbapi.Context{ClusterID: "cluster-2", Namespace: "team-a"}.SpaceGUID(), "clusters differ")
	assert.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, a.SpaceGUID(), "a name-based GUID")
	assert.NotEmpty(t, osbapi.Context{}.OrganizationGUID(), "never empty, even without a cluster id")
}

func TestProvisionRefusedInTheErrorsArrayShape(t *testing.T) {
	b := fakebroker.New(t)
	b.Script(fakebroker.OpProvision, fakebroker.Respond{Status: 400,
		Body: `{"errors":[{"msg":"Missing organization_guid","param":"organization_guid"}]}`})
	c := newClient(t, b)
	_, err := c.Provision(testCtx(t), meta, provisionReq("i1"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `broker answered 400: "Missing organization_guid" (PUT /v2/service_instances/i1)`)
}

func TestProvisionInvalidRequest(t *testing.T) {
	b := fakebroker.New(t)
	c := newClient(t, b)
	tests := []struct {
		name   string
		change func(*osbclient.ProvisionRequest)
		msg    string
	}{
		{"no instance id", func(r *osbclient.ProvisionRequest) { r.InstanceID = "" }, "provision needs an instance ID"},
		{"no service id", func(r *osbclient.ProvisionRequest) { r.ServiceID = " " }, "provision needs a service ID"},
		{"no plan id", func(r *osbclient.ProvisionRequest) { r.PlanID = "" }, "provision needs a plan ID"},
		{"array parameters", func(r *osbclient.ProvisionRequest) { r.Parameters = json.RawMessage(`[1]`) }, "parameters must be a JSON object"},
		{"broken parameters", func(r *osbclient.ProvisionRequest) { r.Parameters = json.RawMessage(`{"a":`) }, "parameters must be a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := provisionReq("i1")
			tt.change(&req)
			_, err := c.Provision(testCtx(t), meta, req)
			require.ErrorIs(t, err, osbclient.ErrInvalidRequest)
			assert.Contains(t, err.Error(), tt.msg)
		})
	}
	assert.Zero(t, b.Count(), "nothing was sent")
}

func TestProvisionNullParametersAreLeftOut(t *testing.T) {
	b := fakebroker.New(t)
	c := newClient(t, b)
	req := provisionReq("i1")
	req.Parameters = json.RawMessage(" null ")
	_, err := c.Provision(testCtx(t), meta, req)
	require.NoError(t, err)
	call, _ := b.LastCall(fakebroker.OpProvision)
	assert.NotContains(t, call.JSON, "parameters")
}

func TestUpdate(t *testing.T) {
	tests := []struct {
		name       string
		setup      func(b *fakebroker.Broker)
		change     func(r *osbclient.UpdateRequest)
		wantStatus int
		wantAsync  bool
		wantOp     string
		wantErr    errCheck
		wantPlan   string
		wantParams map[string]any
	}{
		{
			name:       "200 updated",
			wantStatus: 200, wantPlan: fakebroker.PlanLargeID,
			wantParams: map[string]any{"storageGB": float64(20)},
		},
		{
			name:       "200 without plan change and without parameters keeps both",
			change:     func(r *osbclient.UpdateRequest) { r.PlanID, r.Parameters = "", nil },
			wantStatus: 200, wantPlan: fakebroker.PlanSmallID,
			wantParams: map[string]any{"storageGB": float64(10), "region": "eu"},
		},
		{
			name: "202 accepted",
			setup: func(b *fakebroker.Broker) {
				b.Script(fakebroker.OpUpdate, fakebroker.Respond{Async: &fakebroker.Async{Operation: "upd-1"}})
			},
			wantStatus: 202, wantAsync: true, wantOp: "upd-1",
			wantPlan: fakebroker.PlanSmallID, wantParams: map[string]any{"storageGB": float64(10), "region": "eu"},
		},
		{
			name:     "400 plan not updateable",
			change:   func(r *osbclient.UpdateRequest) { r.PlanID = fakebroker.PlanFixedID },
			wantErr:  errCheck{is: osbclient.IsBadRequest, msg: []string{"cannot change", "(PATCH /v2/service_instances/i1)"}},
			wantPlan: fakebroker.PlanSmallID, wantParams: map[string]any{"storageGB": float64(10), "region": "eu"},
		},
		{
			name: "422 ConcurrencyError",
			setup: func(b *fakebroker.Broker) {
				b.Script(fakebroker.OpUpdate, fakebroker.Respond{Status: 422, Error: "ConcurrencyError", Description: "busy"})
			},
			wantErr:  errCheck{is: osbclient.IsConcurrencyError, retryable: true},
			wantPlan: fakebroker.PlanSmallID, wantParams: map[string]any{"storageGB": float64(10), "region": "eu"},
		},
		{
			name: "422 AsyncRequired",
			setup: func(b *fakebroker.Broker) {
				b.Script(fakebroker.OpUpdate, fakebroker.Respond{Status: 422, Error: "AsyncRequired"})
			},
			wantErr:  errCheck{is: osbclient.IsAsyncRequired},
			wantPlan: fakebroker.PlanSmallID, wantParams: map[string]any{"storageGB": float64(10), "region": "eu"},
		},
		{
			name: "422 MaintenanceInfoConflict with instance_usable",
			setup: func(b *fakebroker.Broker) {
				b.Script(fakebroker.OpUpdate, fakebroker.Respond{Status: 422, Body: map[string]any{
					"error": "MaintenanceInfoConflict", "description": "upgrade first", "instance_usable": true, "update_repeatable": false,
				}})
			},
			wantErr: errCheck{is: func(err error) bool {
				h, ok := osbclient.AsHTTPError(err)
				return ok && osbclient.IsMaintenanceInfoConflict(err) && *h.InstanceUsable && !*h.UpdateRepeatable
			}},
			wantPlan: fakebroker.PlanSmallID, wantParams: map[string]any{"storageGB": float64(10), "region": "eu"},
		},
		{
			name:     "500 on update needs no orphan mitigation",
			setup:    func(b *fakebroker.Broker) { b.Script(fakebroker.OpUpdate, fakebroker.Respond{Status: 500}) },
			wantErr:  errCheck{is: isHTTPStatus(500), msg: []string{"broker answered 500 Internal Server Error (PATCH"}, retryable: true},
			wantPlan: fakebroker.PlanSmallID, wantParams: map[string]any{"storageGB": float64(10), "region": "eu"},
		},
		{
			name:     "201 is not an update answer",
			setup:    func(b *fakebroker.Broker) { b.Script(fakebroker.OpUpdate, fakebroker.Respond{Status: 201}) },
			wantErr:  errCheck{is: osbclient.IsMalformed, msg: []string{"unexpected status 201 Created for update"}},
			wantPlan: fakebroker.PlanSmallID, wantParams: map[string]any{"storageGB": float64(10), "region": "eu"},
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
			req := osbclient.UpdateRequest{
				InstanceID: "i1", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanLargeID,
				Parameters:     json.RawMessage(`{"storageGB": 20}`),
				PreviousValues: &osbapi.PreviousValues{ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID},
			}
			if tt.change != nil {
				tt.change(&req)
			}
			resp, err := c.Update(testCtx(t), meta, req)
			tt.wantErr.check(t, err)
			if tt.wantErr.is == nil {
				assert.Equal(t, tt.wantStatus, resp.HTTPStatus)
				assert.Equal(t, tt.wantAsync, resp.Async)
				assert.Equal(t, tt.wantOp, resp.Operation)
			}
			inst, ok := b.Instance("i1")
			require.True(t, ok)
			assert.Equal(t, tt.wantPlan, inst.PlanID)
			assert.Equal(t, tt.wantParams, inst.Parameters)
		})
	}
}

func TestUpdateRequest(t *testing.T) {
	b := fakebroker.New(t)
	b.PutInstance(existing("i1"))
	c := newClient(t, b)
	_, err := c.Update(testCtx(t), meta, osbclient.UpdateRequest{
		InstanceID: "i1", ServiceID: fakebroker.ServiceDBID,
		Context:        &osbapi.Context{Namespace: "team-a"},
		Parameters:     json.RawMessage(`{"storageGB": 30}`),
		PreviousValues: &osbapi.PreviousValues{ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID, MaintenanceInfo: &osbapi.MaintenanceInfo{Version: "1.0.0"}},
	})
	require.NoError(t, err)
	call, _ := b.LastCall(fakebroker.OpUpdate)
	assert.Equal(t, http.MethodPatch, call.Method)
	assert.Equal(t, "true", call.Query.Get("accepts_incomplete"))
	assert.Equal(t, map[string]any{
		"service_id": fakebroker.ServiceDBID,
		"context":    map[string]any{"platform": "kubernetes", "namespace": "team-a"},
		"parameters": map[string]any{"storageGB": float64(30)},
		"previous_values": map[string]any{
			"service_id": fakebroker.ServiceDBID, "plan_id": fakebroker.PlanSmallID,
			"organization_id":  osbapi.Context{Namespace: "team-a"}.OrganizationGUID(),
			"space_id":         osbapi.Context{Namespace: "team-a"}.SpaceGUID(),
			"maintenance_info": map[string]any{"version": "1.0.0"},
		},
	}, call.JSON, "plan_id is left out when the plan does not change")
}

func TestDeprovision(t *testing.T) {
	tests := []struct {
		name         string
		setup        func(b *fakebroker.Broker)
		wantStatus   int
		wantAsync    bool
		wantOp       string
		wantGone     bool
		wantErr      errCheck
		wantInstance bool
	}{
		{name: "200 deleted", wantStatus: 200},
		{
			name: "200 with any body is a success",
			setup: func(b *fakebroker.Broker) {
				b.Script(fakebroker.OpDeprovision, fakebroker.Respond{Status: 200, Malformed: true})
			},
			wantStatus: 200, wantInstance: true,
		},
		{
			name: "202 accepted",
			setup: func(b *fakebroker.Broker) {
				b.Script(fakebroker.OpDeprovision, fakebroker.Respond{Async: &fakebroker.Async{Operation: "del-1"}})
			},
			wantStatus: 202, wantAsync: true, wantOp: "del-1", wantInstance: true,
		},
		{
			name: "202 with malformed body",
			setup: func(b *fakebroker.Broker) {
				b.Script(fakebroker.OpDeprovision, fakebroker.Respond{Status: 202, Malformed: true})
			},
			wantErr:      errCheck{is: osbclient.IsMalformed, msg: []string{"status 202", "(DELETE /v2/service_instances/i1)"}},
			wantInstance: true,
		},
		{
			name:       "410 gone is a success",
			setup:      func(b *fakebroker.Broker) { b.ResetState() },
			wantStatus: 410, wantGone: true,
		},
		{
			name:         "400 while bindings exist",
			setup:        func(b *fakebroker.Broker) { b.PutBinding(existingBinding("i1", "b1")) },
			wantErr:      errCheck{is: osbclient.IsBadRequest, msg: []string{"still has bindings b1"}},
			wantInstance: true,
		},
		{
			name: "422 ConcurrencyError",
			setup: func(b *fakebroker.Broker) {
				b.Script(fakebroker.OpDeprovision, fakebroker.Respond{Status: 422, Error: "ConcurrencyError"})
			},
			wantErr:      errCheck{is: osbclient.IsConcurrencyError, retryable: true},
			wantInstance: true,
		},
		{
			name: "422 AsyncRequired",
			setup: func(b *fakebroker.Broker) {
				b.Script(fakebroker.OpDeprovision, fakebroker.Respond{Status: 422, Error: "AsyncRequired"})
			},
			wantErr:      errCheck{is: osbclient.IsAsyncRequired},
			wantInstance: true,
		},
		{
			name:         "500 on deprovision needs no orphan mitigation",
			setup:        func(b *fakebroker.Broker) { b.Script(fakebroker.OpDeprovision, fakebroker.Respond{Status: 503}) },
			wantErr:      errCheck{is: isHTTPStatus(503), retryable: true},
			wantInstance: true,
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
			resp, err := c.Deprovision(testCtx(t), meta, deprovisionReq("i1"))
			tt.wantErr.check(t, err)
			if tt.wantErr.is == nil {
				assert.Equal(t, tt.wantStatus, resp.HTTPStatus)
				assert.Equal(t, tt.wantAsync, resp.Async)
				assert.Equal(t, tt.wantOp, resp.Operation)
				assert.Equal(t, tt.wantGone, resp.Gone)
			}
			_, held := b.Instance("i1")
			assert.Equal(t, tt.wantInstance, held)

			call, ok := b.LastCall(fakebroker.OpDeprovision)
			require.True(t, ok)
			assert.Equal(t, http.MethodDelete, call.Method)
			assert.Equal(t, "true", call.Query.Get("accepts_incomplete"))
			assert.Equal(t, fakebroker.ServiceDBID, call.Query.Get("service_id"))
			assert.Equal(t, fakebroker.PlanSmallID, call.Query.Get("plan_id"))
			assert.Empty(t, call.Body)
		})
	}
}

func TestGetInstance(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(b *fakebroker.Broker)
		want    *osbapi.GetInstanceResponse
		wantErr errCheck
	}{
		{
			name:  "200",
			setup: func(b *fakebroker.Broker) { b.PutInstance(existing("i1")) },
			want: &osbapi.GetInstanceResponse{
				ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID,
				Parameters: json.RawMessage(`{"region":"eu","storageGB":10}`),
			},
		},
		{
			name:    "404 not found",
			wantErr: errCheck{is: osbclient.IsNotFound, msg: []string{"broker answered 404", "(GET /v2/service_instances/i1)"}},
		},
		{
			name: "422 while being updated",
			setup: func(b *fakebroker.Broker) {
				b.PutInstance(existing("i1"))
				b.Script(fakebroker.OpUpdate, fakebroker.Respond{Async: &fakebroker.Async{InProgressPolls: 1}})
				c := newClient(t, b)
				_, err := c.Update(testCtx(t), meta, osbclient.UpdateRequest{InstanceID: "i1", ServiceID: fakebroker.ServiceDBID})
				require.NoError(t, err)
			},
			wantErr: errCheck{is: osbclient.IsConcurrencyError, retryable: true},
		},
		{
			name: "malformed",
			setup: func(b *fakebroker.Broker) {
				b.Script(fakebroker.OpGetInstance, fakebroker.Respond{Status: 200, Body: `{"plan_id": 7}`})
			},
			wantErr: errCheck{is: osbclient.IsMalformed, msg: []string{"invalid JSON", `body begins "{\"plan_id\": 7}"`}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := fakebroker.New(t)
			if tt.setup != nil {
				tt.setup(b)
			}
			c := newClient(t, b)
			got, err := c.GetInstance(testCtx(t), meta, osbclient.GetInstanceRequest{InstanceID: "i1", ServiceID: fakebroker.ServiceDBID})
			tt.wantErr.check(t, err)
			if tt.want != nil {
				tt.want.DashboardURL = b.URL() + "/dashboard/i1"
				assert.Equal(t, tt.want, got)
			}
			call, _ := b.LastCall(fakebroker.OpGetInstance)
			assert.Equal(t, fakebroker.ServiceDBID, call.Query.Get("service_id"))
			assert.False(t, call.Query.Has("plan_id"), "empty hints are left out")
		})
	}
}

func TestInstanceIDIsEscaped(t *testing.T) {
	b := fakebroker.New(t)
	c := newClient(t, b)
	_, err := c.Provision(testCtx(t), meta, provisionReq("a/../b?c"))
	require.NoError(t, err)
	_, ok := b.Instance("a/../b?c")
	assert.True(t, ok)
	call, _ := b.LastCall(fakebroker.OpProvision)
	assert.True(t, strings.HasPrefix(call.Path, "/v2/service_instances/"))
}
