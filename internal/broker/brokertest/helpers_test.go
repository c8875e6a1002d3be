package brokertest_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/internal/broker"
	"github.com/lockstep-dev/lockstep/internal/broker/brokertest"
)

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// newClient returns an OSB client for b, closed when the test ends.
func newClient(t *testing.T, b *brokertest.Broker) *broker.Client {
	t.Helper()
	c, err := broker.New(b.Config())
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// raw sends a request by hand, for what the OSB client would never send.
type raw struct {
	t      *testing.T
	b      *brokertest.Broker
	client *http.Client
}

func newRaw(t *testing.T, b *brokertest.Broker) *raw {
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
	req.Header.Set(broker.HeaderAPIVersion, broker.APIVersion)
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

var meta = broker.RequestMeta{Identity: broker.Identity{Username: "alice"}, RequestID: "req-1"}

func provision(id, planID, params string) broker.ProvisionRequest {
	return broker.ProvisionRequest{
		InstanceID: id, ServiceID: brokertest.ServiceDBID, PlanID: planID,
		Context:    broker.Context{Namespace: "ns"},
		Parameters: []byte(params),
	}
}

func bind(instanceID, bindingID, params string) broker.BindRequest {
	return broker.BindRequest{
		InstanceID: instanceID, BindingID: bindingID, ServiceID: brokertest.ServiceDBID, PlanID: brokertest.PlanSmallID,
		Parameters: []byte(params),
	}
}

// osb calls the broker through the OSB client and returns only HTTP
// statuses, for step tables.
type osb struct {
	t *testing.T
	c *broker.Client
}

func newOSB(t *testing.T, b *brokertest.Broker) osb { return osb{t: t, c: newClient(t, b)} }

// code returns status when err is nil, and the refusal's status otherwise.
func (o osb) code(status int, err error) int {
	o.t.Helper()
	if err != nil {
		h, ok := broker.AsHTTPError(err)
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
	r, err := o.c.Update(testCtx(o.t), meta, broker.UpdateRequest{
		InstanceID: id, ServiceID: brokertest.ServiceDBID, PlanID: planID, Parameters: []byte(params),
	})
	if err != nil {
		return o.code(0, err)
	}
	return r.HTTPStatus
}

func (o osb) deprovision(id, planID string) int {
	o.t.Helper()
	r, err := o.c.Deprovision(testCtx(o.t), meta, broker.DeprovisionRequest{InstanceID: id, ServiceID: brokertest.ServiceDBID, PlanID: planID})
	if err != nil {
		return o.code(0, err)
	}
	return r.HTTPStatus
}

func (o osb) getInstance(id string) int {
	o.t.Helper()
	_, err := o.c.GetInstance(testCtx(o.t), meta, broker.GetInstanceRequest{InstanceID: id})
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
	r, err := o.c.Unbind(testCtx(o.t), meta, broker.UnbindRequest{
		InstanceID: instanceID, BindingID: bindingID, ServiceID: brokertest.ServiceDBID, PlanID: brokertest.PlanSmallID,
	})
	if err != nil {
		return o.code(0, err)
	}
	return r.HTTPStatus
}

func (o osb) getBinding(instanceID, bindingID string) int {
	o.t.Helper()
	_, err := o.c.GetBinding(testCtx(o.t), meta, broker.GetBindingRequest{InstanceID: instanceID, BindingID: bindingID})
	return o.code(200, err)
}

// lastOperation returns the status and state of an instance poll.
func (o osb) lastOperation(id, operation string) (int, broker.State) {
	o.t.Helper()
	r, err := o.c.InstanceLastOperation(testCtx(o.t), meta, broker.InstanceLastOperationRequest{InstanceID: id, Operation: operation})
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
func settle(t *testing.T, b *brokertest.Broker, op brokertest.Op) {
	t.Helper()
	_, err := b.WaitForCalls(testCtx(t), op, 1)
	require.NoError(t, err)
	require.NoError(t, b.WaitIdle(testCtx(t)))
}
