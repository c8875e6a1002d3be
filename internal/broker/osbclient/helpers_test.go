package osbclient_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
	"github.com/lockstep-dev/lockstep/internal/broker/osbclient"
)

// newClient returns a client for b, closed when the test ends.
func newClient(t *testing.T, b *fakebroker.Broker, change ...func(*osbclient.Config)) *osbclient.Client {
	t.Helper()
	cfg := b.Config()
	for _, f := range change {
		f(&cfg)
	}
	c, err := osbclient.New(cfg)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// testCtx returns a context that ends with the test, bounded in time.
func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

var meta = osbclient.RequestMeta{
	Identity: osbclient.Identity{
		Username: "alice", UID: "uid-1", Groups: []string{"dev", "system:authenticated"},
		Extra: map[string][]string{"scopes": {"a", "b"}},
	},
	RequestID: "op-123",
}

func provisionReq(id string) osbclient.ProvisionRequest {
	return osbclient.ProvisionRequest{
		InstanceID: id, ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID,
		Context:    osbapi.Context{Namespace: "team-a", ClusterID: "cluster-1", InstanceName: "orders"},
		Parameters: json.RawMessage(`{"storageGB": 10, "region": "eu"}`),
	}
}

func deprovisionReq(id string) osbclient.DeprovisionRequest {
	return osbclient.DeprovisionRequest{InstanceID: id, ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID}
}

func bindReq(instanceID, bindingID string) osbclient.BindRequest {
	return osbclient.BindRequest{
		InstanceID: instanceID, BindingID: bindingID, ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID,
		Context:    osbapi.Context{Namespace: "team-a", ClusterID: "cluster-1"},
		Parameters: json.RawMessage(`{"role": "reader"}`),
	}
}

// existing is an instance as provisionReq creates it.
func existing(id string) fakebroker.Instance {
	return fakebroker.Instance{
		ID: id, ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID,
		Parameters: map[string]any{"storageGB": float64(10), "region": "eu"},
	}
}

// existingBinding is a binding as bindReq creates it.
func existingBinding(instanceID, bindingID string) fakebroker.Binding {
	return fakebroker.Binding{
		InstanceID: instanceID, ID: bindingID, ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID,
		Parameters:  map[string]any{"role": "reader"},
		Credentials: map[string]any{"username": "u", "password": "s3cr3t-pw"},
	}
}

// errCheck describes what a test expects of an error.
type errCheck struct {
	is        func(error) bool // nil: no error expected
	msg       []string         // fragments of err.Error()
	orphan    bool             // NeedsOrphanMitigation
	retryable bool             // Retryable
}

func (e errCheck) check(t *testing.T, err error) {
	t.Helper()
	if e.is == nil {
		require.NoError(t, err)
		return
	}
	require.Error(t, err)
	require.True(t, e.is(err), "unexpected error kind: %v", err)
	for _, m := range e.msg {
		require.Contains(t, err.Error(), m)
	}
	require.Equal(t, e.orphan, osbclient.NeedsOrphanMitigation(err), "NeedsOrphanMitigation(%v)", err)
	require.Equal(t, e.retryable, osbclient.Retryable(err), "Retryable(%v)", err)
}

// settle waits until b received n requests of kind op and handled every
// request, so that a request the client gave up on has had its effect.
func settle(t *testing.T, b *fakebroker.Broker, op osbclient.Op, n int) {
	t.Helper()
	_, err := b.WaitForCalls(testCtx(t), op, n)
	require.NoError(t, err)
	require.NoError(t, b.WaitIdle(testCtx(t)))
}
