package fakebroker_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
	"github.com/lockstep-dev/lockstep/internal/broker/osbclient"
)

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// newClient returns an OSB client for b, closed when the test ends.
func newClient(t *testing.T, b *fakebroker.Broker) *osbclient.Client {
	t.Helper()
	c, err := osbclient.New(b.Config())
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// raw sends a request by hand, for what the OSB client would never send.
type raw struct {
	t      *testing.T
	b      *fakebroker.Broker
	client *http.Client
}

func newRaw(t *testing.T, b *fakebroker.Broker) *raw {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &raw{t: t, b: b, client: &http.Client{Transport: tr}}
}

// do sends method path with body; the API version header is set unless
// headers says otherwise. It returns the status and body.
func (r *raw) do(method, path, body string, headers map[string]string) (int, string) {
	r.t.Helper()
	req, err := http.NewRequestWithContext(testCtx(r.t), method, r.b.URL()+path, strings.NewReader(body))
	require.NoError(r.t, err)
	req.Header.Set(osbapi.HeaderAPIVersion, osbapi.APIVersion)
	for k, v := range headers {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := r.client.Do(req)
	require.NoError(r.t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(r.t, err)
	return resp.StatusCode, string(out)
}

var meta = osbclient.RequestMeta{Identity: osbclient.Identity{Username: "alice"}, RequestID: "req-1"}

func provision(id, planID, params string) osbclient.ProvisionRequest {
	return osbclient.ProvisionRequest{
		InstanceID: id, ServiceID: fakebroker.ServiceDBID, PlanID: planID,
		Context:    osbapi.Context{Namespace: "ns"},
		Parameters: []byte(params),
	}
}

func bind(instanceID, bindingID, params string) osbclient.BindRequest {
	return osbclient.BindRequest{
		InstanceID: instanceID, BindingID: bindingID, ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID,
		Parameters: []byte(params),
	}
}

// osb calls the broker through the OSB client and returns only HTTP
// statuses, for step tables.
type osb struct {
	t *testing.T
	c *osbclient.Client
}

func newOSB(t *testing.T, b *fakebroker.Broker) osb { return osb{t: t, c: newClient(t, b)} }

// code returns status when err is nil, and the refusal's status otherwise.
func (o osb) code(status int, err error) int {
	o.t.Helper()
	if err != nil {
		h, ok := osbclient.AsHTTPError(err)
		require.True(o.t, ok, "not an HTTP error: %v", err)
		return h.StatusCode
	}
	return status
}

func (o osb) provision(id, planID, params string) int {
	o.t.Helper()
	r, err := o.c.Provision(testCtx(o.t), meta, provision(id, planID, params))
	if err != nil {
		return o.code(0, err)
	}
	return r.HTTPStatus
}

func (o osb) update(id, planID, params string) int {
	o.t.Helper()
	r, err := o.c.Update(testCtx(o.t), meta, osbclient.UpdateRequest{
		InstanceID: id, ServiceID: fakebroker.ServiceDBID, PlanID: planID, Parameters: []byte(params),
	})
	if err != nil {
		return o.code(0, err)
	}
	return r.HTTPStatus
}

func (o osb) deprovision(id, planID string) int {
	o.t.Helper()
	r, err := o.c.Deprovision(testCtx(o.t), meta, osbclient.DeprovisionRequest{InstanceID: id, ServiceID: fakebroker.ServiceDBID, PlanID: planID})
	if err != nil {
		return o.code(0, err)
	}
	return r.HTTPStatus
}

func (o osb) getInstance(id string) int {
	o.t.Helper()
	_, err := o.c.GetInstance(testCtx(o.t), meta, osbclient.GetInstanceRequest{InstanceID: id})
	return o.code(200, err)
}

func (o osb) bind(instanceID, bindingID, params string) int {
	o.t.Helper()
	r, err := o.c.Bind(testCtx(o.t), meta, bind(instanceID, bindingID, params))
	if err != nil {
		return o.code(0, err)
	}
	return r.HTTPStatus
}

func (o osb) unbind(instanceID, bindingID string) int {
	o.t.Helper()
	r, err := o.c.Unbind(testCtx(o.t), meta, osbclient.UnbindRequest{
		InstanceID: instanceID, BindingID: bindingID, ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID,
	})
	if err != nil {
		return o.code(0, err)
	}
	return r.HTTPStatus
}

func (o osb) getBinding(instanceID, bindingID string) int {
	o.t.Helper()
	_, err := o.c.GetBinding(testCtx(o.t), meta, osbclient.GetBindingRequest{InstanceID: instanceID, BindingID: bindingID})
	return o.code(200, err)
}

// lastOperation returns the status and state of an instance poll.
func (o osb) lastOperation(id, operation string) (int, osbapi.State) {
	o.t.Helper()
	r, err := o.c.InstanceLastOperation(testCtx(o.t), meta, osbclient.InstanceLastOperationRequest{InstanceID: id, Operation: operation})
	if err != nil {
		return o.code(0, err), ""
	}
	return r.HTTPStatus, r.State
}

func jsonBody(s string) io.Reader { return strings.NewReader(s) }

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	out, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(out)
}

// settle waits until b received a request of kind op and handled every
// request.
func settle(t *testing.T, b *fakebroker.Broker, op fakebroker.Op) {
	t.Helper()
	_, err := b.WaitForCalls(testCtx(t), op, 1)
	require.NoError(t, err)
	require.NoError(t, b.WaitIdle(testCtx(t)))
}
