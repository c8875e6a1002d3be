package fakebroker_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
	"github.com/lockstep-dev/lockstep/internal/broker/osbclient"
)

func TestScriptQueueThenAlwaysThenDefault(t *testing.T) {
	b := fakebroker.New(t)
	o := newOSB(t, b)
	b.Script(fakebroker.OpProvision, fakebroker.Respond{Status: 500}, fakebroker.Respond{Status: 422, Error: "ConcurrencyError"})
	b.Always(fakebroker.OpProvision, fakebroker.Respond{Status: 503})
	assert.Equal(t, 2, b.Pending(fakebroker.OpProvision))

	assert.Equal(t, 500, o.provision("i1", small, ``))
	assert.Equal(t, 422, o.provision("i1", small, ``))
	assert.Equal(t, 0, b.Pending(fakebroker.OpProvision))
	assert.Equal(t, 503, o.provision("i1", small, ``))
	assert.Equal(t, 503, o.provision("i1", small, ``))
	assert.Empty(t, b.Instances(), "scripted answers change nothing")

	b.Reset()
	assert.Equal(t, 201, o.provision("i1", small, ``), "back to the default")
	assert.Equal(t, 200, o.getInstance("i1"), "other ops were never scripted")
}

func TestScriptInstanceComesFirst(t *testing.T) {
	b := fakebroker.New(t)
	o := newOSB(t, b)
	b.Script(fakebroker.OpProvision, fakebroker.Respond{Status: 500})
	b.ScriptInstance(fakebroker.OpProvision, "i2", fakebroker.Respond{Status: 409})
	assert.Equal(t, 2, b.Pending(fakebroker.OpProvision))

	assert.Equal(t, 409, o.provision("i2", small, ``), "the instance's queue first")
	assert.Equal(t, 500, o.provision("i2", small, ``), "then the op's queue")
	assert.Equal(t, 201, o.provision("i1", small, ``))

	b.ScriptInstance(fakebroker.OpBind, "i1", fakebroker.Respond{Status: 422, Error: "RequiresApp"})
	assert.Equal(t, 422, o.bind("i1", "b1", ``), "binding ops are scripted by their instance")
	assert.Equal(t, 201, o.bind("i1", "b1", ``))
}

func TestScriptedAnswers(t *testing.T) {
	tests := []struct {
		name       string
		respond    fakebroker.Respond
		wantStatus int
		wantBody   string // JSON, or raw when not JSON
		wantHeader http.Header
		instance   bool
	}{
		{
			name:       "error code and description",
			respond:    fakebroker.Respond{Status: 422, Error: "AsyncRequired", Description: "async only"},
			wantStatus: 422, wantBody: `{"error": "AsyncRequired", "description": "async only"}`,
		},
		{
			name:       "description without status is a 400",
			respond:    fakebroker.Respond{Description: "no"},
			wantStatus: 400, wantBody: `{"description": "no"}`,
		},
		{
			name:       "status alone has an empty object body",
			respond:    fakebroker.Respond{Status: 500},
			wantStatus: 500, wantBody: `{}`,
		},
		{
			name:       "string body as is",
			respond:    fakebroker.Respond{Status: 201, Body: "plain text"},
			wantStatus: 201, wantBody: "plain text",
		},
		{
			name:       "bytes body as is",
			respond:    fakebroker.Respond{Status: 201, Body: []byte(`{"a":1}`)},
			wantStatus: 201, wantBody: `{"a": 1}`,
		},
		{
			name:       "raw JSON body as is",
			respond:    fakebroker.Respond{Status: 201, Body: json.RawMessage(`{"b":2}`)},
			wantStatus: 201, wantBody: `{"b": 2}`,
		},
		{
			name:       "other bodies are JSON-encoded",
			respond:    fakebroker.Respond{Status: 200, Body: map[string]any{"dashboard_url": "x"}},
			wantStatus: 200, wantBody: `{"dashboard_url": "x"}`,
		},
		{
			name:       "malformed keeps the default status",
			respond:    fakebroker.Respond{Malformed: true},
			wantStatus: 201, wantBody: `{"this is": not json at all`,
		},
		{
			name:       "header is added to the default answer",
			respond:    fakebroker.Respond{Header: http.Header{"X-Test": {"1"}}},
			wantStatus: 201, wantHeader: http.Header{"X-Test": {"1"}}, instance: true,
		},
		{
			name:       "apply carries out the change behind a scripted answer",
			respond:    fakebroker.Respond{Status: 500, Apply: true},
			wantStatus: 500, wantBody: `{}`, instance: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := fakebroker.New(t)
			b.Script(fakebroker.OpProvision, tt.respond)
			r := newRaw(t, b)
			req, err := http.NewRequestWithContext(testCtx(t), http.MethodPut, b.URL()+"/v2/service_instances/i1",
				jsonBody(`{"service_id": "db-service-id", "plan_id": "db-small-plan-id", "organization_guid": "o", "space_guid": "s"}`))
			require.NoError(t, err)
			req.Header.Set(osbapi.HeaderAPIVersion, "2.17")
			resp, err := r.client.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			body := readAll(t, resp)
			assert.Equal(t, tt.wantStatus, resp.StatusCode)
			if tt.wantBody != "" {
				if json.Valid([]byte(tt.wantBody)) {
					assert.JSONEq(t, tt.wantBody, body)
				} else {
					assert.Equal(t, tt.wantBody, body)
				}
			}
			for k := range tt.wantHeader {
				assert.Equal(t, tt.wantHeader.Get(k), resp.Header.Get(k))
			}
			_, held := b.Instance("i1")
			assert.Equal(t, tt.instance, held)
			call, _ := b.LastCall(fakebroker.OpProvision)
			assert.Equal(t, tt.wantStatus, call.Status)
		})
	}
}

func TestAsyncProvision(t *testing.T) {
	b := fakebroker.New(t)
	o := newOSB(t, b)
	b.Script(fakebroker.OpProvision, fakebroker.Respond{Async: &fakebroker.Async{
		Operation: "prov-1", InProgressPolls: 2, ProgressDescription: "creating", Description: "done", RetryAfter: "5",
	}})
	resp, err := o.c.Provision(testCtx(t), meta, provision("i1", small, `{"storageGB": 3}`))
	require.NoError(t, err)
	assert.Equal(t, 202, resp.HTTPStatus)
	assert.Equal(t, "prov-1", resp.Operation)
	assert.Equal(t, []fakebroker.Operation{{Key: "prov-1", Op: fakebroker.OpProvision, InstanceID: "i1"}}, b.Operations())

	assert.Empty(t, b.Instances(), "nothing exists before the operation ends")
	assert.Equal(t, 404, o.getInstance("i1"), "GET answers 404 while provisioning")
	assert.Equal(t, 422, o.provision("i1", small, `{"storageGB": 3}`), "ConcurrencyError while in progress")
	assert.Equal(t, 422, o.bind("i1", "b1", ``), "bindings wait for the instance")

	req := osbclient.InstanceLastOperationRequest{InstanceID: "i1", Operation: "prov-1"}
	for i := range 2 {
		lo, err := o.c.InstanceLastOperation(testCtx(t), meta, req)
		require.NoError(t, err)
		assert.Equal(t, osbapi.StateInProgress, lo.State, "poll %d", i+1)
		assert.Equal(t, "creating", lo.Description)
		assert.Equal(t, 5*time.Second, lo.RetryAfter)
		assert.Empty(t, b.Instances())
	}
	lo, err := o.c.InstanceLastOperation(testCtx(t), meta, req)
	require.NoError(t, err)
	assert.Equal(t, osbapi.StateSucceeded, lo.State)
	assert.Equal(t, "done", lo.Description)
	assert.Zero(t, lo.RetryAfter)
	inst, ok := b.Instance("i1")
	require.True(t, ok, "the instance exists once the operation succeeded")
	assert.Equal(t, map[string]any{"storageGB": float64(3)}, inst.Parameters)

	code, state := o.lastOperation("i1", "prov-1")
	assert.Equal(t, 200, code)
	assert.Equal(t, osbapi.StateSucceeded, state, "later polls repeat the final state")
	code, state = o.lastOperation("i1", "")
	assert.Equal(t, osbapi.StateSucceeded, state, "without a key the latest operation answers")
	assert.Equal(t, 200, code)
	assert.Equal(t, 200, o.provision("i1", small, `{"storageGB": 3}`), "no longer busy")
	assert.True(t, b.Operations()[0].Done)
}

func TestAsyncFailureChangesNothing(t *testing.T) {
	b := fakebroker.New(t)
	o := newOSB(t, b)
	require.Equal(t, 201, o.provision("i1", small, ``))
	b.Script(fakebroker.OpDeprovision, fakebroker.Respond{Async: &fakebroker.Async{Fail: true, Description: "volume busy"}})
	require.Equal(t, 202, o.deprovision("i1", small))

	lo, err := o.c.InstanceLastOperation(testCtx(t), meta, osbclient.InstanceLastOperationRequest{InstanceID: "i1"})
	require.NoError(t, err)
	assert.Equal(t, osbapi.StateFailed, lo.State)
	assert.Equal(t, "volume busy", lo.Description)
	_, ok := b.Instance("i1")
	assert.True(t, ok, "a failed deprovision leaves the instance")
}

func TestAsyncDeprovisionGone(t *testing.T) {
	b := fakebroker.New(t)
	o := newOSB(t, b)
	require.Equal(t, 201, o.provision("i1", small, ``))
	b.Script(fakebroker.OpDeprovision, fakebroker.Respond{Async: &fakebroker.Async{Gone: true, OmitOperation: true}})
	resp, err := o.c.Deprovision(testCtx(t), meta, osbclient.DeprovisionRequest{InstanceID: "i1", ServiceID: fakebroker.ServiceDBID, PlanID: small})
	require.NoError(t, err)
	assert.Empty(t, resp.Operation, "no operation key")

	code, _ := o.lastOperation("i1", "")
	assert.Equal(t, 410, code)
	assert.Empty(t, b.Instances())
}

func TestAsyncGeneratedKeysAndScriptedStatus(t *testing.T) {
	b := fakebroker.New(t)
	o := newOSB(t, b)
	b.Script(fakebroker.OpProvision,
		fakebroker.Respond{Async: &fakebroker.Async{}},
		fakebroker.Respond{Async: &fakebroker.Async{}, Status: 201},
	)
	first, err := o.c.Provision(testCtx(t), meta, provision("i1", small, ``))
	require.NoError(t, err)
	second, err := o.c.Provision(testCtx(t), meta, provision("i2", small, ``))
	require.NoError(t, err)
	assert.Equal(t, "op-1", first.Operation)
	assert.Equal(t, 201, second.HTTPStatus)
	assert.Equal(t, "op-2", second.Operation)
}

func TestAsyncRequiresAcceptsIncomplete(t *testing.T) {
	b := fakebroker.New(t)
	b.Always(fakebroker.OpProvision, fakebroker.Respond{Async: &fakebroker.Async{}})
	r := newRaw(t, b)
	body := `{"service_id": "db-service-id", "plan_id": "db-small-plan-id", "organization_guid": "o", "space_guid": "s"}`
	code, out := r.do(http.MethodPut, "/v2/service_instances/i1", body, nil)
	assert.Equal(t, 422, code)
	assert.JSONEq(t, `{"error": "AsyncRequired", "description": "this request requires accepts_incomplete=true"}`, out)
	code, _ = r.do(http.MethodPut, "/v2/service_instances/i1?accepts_incomplete=true", body, nil)
	assert.Equal(t, 202, code)
}

func TestAsyncOnlyForMutations(t *testing.T) {
	b := fakebroker.New(t)
	b.Script(fakebroker.OpCatalog, fakebroker.Respond{Async: &fakebroker.Async{}})
	code, out := newRaw(t, b).do(http.MethodGet, "/v2/catalog", "", nil)
	assert.Equal(t, 500, code)
	assert.Contains(t, out, "has no asynchronous form")
}

func TestLastOperationWithoutAsyncOperation(t *testing.T) {
	b := fakebroker.New(t)
	o := newOSB(t, b)
	code, _ := o.lastOperation("i1", "")
	assert.Equal(t, 410, code, "unknown instance")
	require.Equal(t, 201, o.provision("i1", small, ``))
	code, state := o.lastOperation("i1", "")
	assert.Equal(t, 200, code)
	assert.Equal(t, osbapi.StateSucceeded, state, "a synchronous broker has nothing in progress")
	code, _ = o.lastOperation("i1", "no-such-op")
	assert.Equal(t, 400, code)
}

func TestAsyncBindAndGetBinding(t *testing.T) {
	b := fakebroker.New(t)
	o := newOSB(t, b)
	require.Equal(t, 201, o.provision("i1", small, ``))
	b.Script(fakebroker.OpBind, fakebroker.Respond{Async: &fakebroker.Async{InProgressPolls: 1}})
	require.Equal(t, 202, o.bind("i1", "b1", ``))
	assert.Equal(t, 404, o.getBinding("i1", "b1"))
	assert.Equal(t, 422, o.deprovision("i1", small), "the instance is busy while a binding is created")
	assert.Equal(t, 422, o.update("i1", "", ``))

	req := osbclient.BindingLastOperationRequest{InstanceID: "i1", BindingID: "b1"}
	lo, err := o.c.BindingLastOperation(testCtx(t), meta, req)
	require.NoError(t, err)
	assert.Equal(t, osbapi.StateInProgress, lo.State)
	lo, err = o.c.BindingLastOperation(testCtx(t), meta, req)
	require.NoError(t, err)
	assert.Equal(t, osbapi.StateSucceeded, lo.State)
	assert.Equal(t, 200, o.getBinding("i1", "b1"))
	assert.Equal(t, 201, o.bind("i1", "b2", ``), "other bindings are free again")
}

func TestDelayKeepsDefaultAndChangesStateAtOnce(t *testing.T) {
	b := fakebroker.New(t)
	b.Script(fakebroker.OpProvision, fakebroker.Respond{Delay: time.Hour})
	c := newClient(t, b)
	ctx, cancel := context.WithTimeout(testCtx(t), 50*time.Millisecond)
	defer cancel()
	_, err := c.Provision(ctx, meta, provision("i1", small, ``))
	require.True(t, osbclient.IsTimeout(err), "got %v", err)
	settle(t, b, fakebroker.OpProvision)
	_, ok := b.Instance("i1")
	assert.True(t, ok, "the broker did the work; only the answer was late (an orphan)")
	call, _ := b.LastCall(fakebroker.OpProvision)
	assert.Zero(t, call.Status, "no answer went out")
}

func TestLatencyComesBeforeAnyChange(t *testing.T) {
	b := fakebroker.New(t, fakebroker.WithLatency(time.Hour))
	c := newClient(t, b)
	ctx, cancel := context.WithTimeout(testCtx(t), 50*time.Millisecond)
	defer cancel()
	_, err := c.Provision(ctx, meta, provision("i1", small, ``))
	require.True(t, osbclient.IsTimeout(err), "got %v", err)
	settle(t, b, fakebroker.OpProvision)
	assert.Empty(t, b.Instances())
	assert.Equal(t, 1, b.Count(fakebroker.OpProvision), "the request is recorded on arrival")

	b.SetLatency(0)
	_, err = c.Provision(testCtx(t), meta, provision("i1", small, ``))
	require.NoError(t, err)

	b.SetLatency(time.Hour)
	b.Reset()
	_, err = c.Catalog(testCtx(t), meta)
	require.NoError(t, err, "Reset turns latency off")
}

func TestHangEndsWhenTheClientGivesUp(t *testing.T) {
	b := fakebroker.New(t)
	b.Script(fakebroker.OpUpdate, fakebroker.Respond{Hang: true, Apply: true})
	require.Equal(t, 201, newOSB(t, b).provision("i1", small, ``))
	c := newClient(t, b)
	ctx, cancel := context.WithTimeout(testCtx(t), 50*time.Millisecond)
	defer cancel()
	_, err := c.Update(ctx, meta, osbclient.UpdateRequest{InstanceID: "i1", ServiceID: fakebroker.ServiceDBID, PlanID: large})
	require.True(t, osbclient.IsTimeout(err), "got %v", err)
	settle(t, b, fakebroker.OpUpdate)
	inst, _ := b.Instance("i1")
	assert.Equal(t, large, inst.PlanID, "Apply: the update happened although no answer came")
}

func TestHangEndsWhenTheBrokerCloses(t *testing.T) {
	b, err := fakebroker.Start()
	require.NoError(t, err)
	b.Script(fakebroker.OpCatalog, fakebroker.Respond{Hang: true})
	c, err := osbclient.New(b.Config())
	require.NoError(t, err)
	defer c.Close()

	errs := make(chan error, 1)
	go func() {
		_, err := c.Catalog(testCtx(t), meta)
		errs <- err
	}()
	_, err = b.WaitForCalls(testCtx(t), fakebroker.OpCatalog, 1)
	require.NoError(t, err)
	b.Close()
	b.Close() // twice is fine
	select {
	case err := <-errs:
		require.Error(t, err)
	case <-testCtx(t).Done():
		t.Fatal("the hanging request did not end when the broker closed")
	}
}

func TestCloseConnection(t *testing.T) {
	b := fakebroker.New(t)
	b.Script(fakebroker.OpDeprovision, fakebroker.Respond{CloseConnection: true})
	require.Equal(t, 201, newOSB(t, b).provision("i1", small, ``))
	_, err := newClient(t, b).Deprovision(testCtx(t), meta, osbclient.DeprovisionRequest{InstanceID: "i1", ServiceID: fakebroker.ServiceDBID, PlanID: small})
	require.True(t, osbclient.IsTransport(err), "got %v", err)
	_, ok := b.Instance("i1")
	assert.True(t, ok)
}
