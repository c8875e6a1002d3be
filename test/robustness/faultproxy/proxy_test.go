package faultproxy

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/broker/osbclient"
)

// through returns a broker and an OSB client that reaches it through a
// proxy.
func through(t *testing.T, timeout time.Duration) (*fakebroker.Broker, *Proxy, *osbclient.Client) {
	t.Helper()
	b := fakebroker.New(t)
	p, err := Start(b.URL())
	require.NoError(t, err)
	t.Cleanup(p.Close)
	c, err := osbclient.New(osbclient.Config{URL: p.URL(), Timeout: timeout})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return b, p, c
}

var meta = osbclient.RequestMeta{Identity: osbclient.Identity{Username: "alice"}, RequestID: "req-7"}

func provision(id string) osbclient.ProvisionRequest {
	return osbclient.ProvisionRequest{
		InstanceID: id, ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID,
		OrganizationGUID: "org", SpaceGUID: "space",
	}
}

func TestFaults(t *testing.T) {
	tests := []struct {
		fault Fault
		// async makes the broker answer 202.
		async bool
		// wantHeld: the broker carried the provision out.
		wantHeld      bool
		wantErr       bool
		wantDelivered int
	}{
		{fault: Fault{Kind: Pass}, wantHeld: true, wantDelivered: 201},
		{fault: Fault{Kind: Drop}, wantErr: true},
		{fault: Fault{Kind: Hang}, wantErr: true},
		{fault: Fault{Kind: Unavailable}, wantErr: true, wantDelivered: 503},
		{fault: Fault{Kind: Slow, Delay: 50 * time.Millisecond}, wantHeld: true, wantDelivered: 201},
		{fault: Fault{Kind: Slow, Delay: time.Minute}, wantHeld: true, wantErr: true},
		{fault: Fault{Kind: Garbage}, wantHeld: true, wantErr: true, wantDelivered: 201},
		{fault: Fault{Kind: DropAfter202}, wantHeld: true, wantDelivered: 201},
		{fault: Fault{Kind: DropAfter202}, async: true, wantHeld: true, wantErr: true},
	}
	for _, tt := range tests {
		name := string(tt.fault.Kind)
		if name == "" {
			name = "pass"
		}
		if tt.async {
			name += " async"
		}
		t.Run(name+" "+tt.fault.Delay.String(), func(t *testing.T) {
			b, p, c := through(t, 500*time.Millisecond)
			if tt.async {
				b.Always(fakebroker.OpProvision, fakebroker.Respond{Async: &fakebroker.Async{After: time.Millisecond}})
			}
			var seen []Request
			p.SetFaults(func(r Request) Fault {
				seen = append(seen, r)
				return tt.fault
			})
			_, err := c.Provision(context.Background(), meta, provision("i1"))
			if tt.wantErr {
				assert.Error(t, err)
			} else {
				assert.NoError(t, err)
			}
			require.NoError(t, b.WaitIdle(context.Background()))
			require.Eventually(t, func() bool { _, held := b.Instance("i1"); return held == tt.wantHeld }, 5*time.Second, 10*time.Millisecond,
				"the broker holds the instance: %v", tt.wantHeld)

			require.Eventually(t, func() bool { return len(p.Exchanges()) == 1 }, 5*time.Second, 10*time.Millisecond, "one exchange recorded")
			x := p.Exchanges()[0]
			assert.Equal(t, osbclient.OpProvision, x.Op)
			assert.Equal(t, "i1", x.InstanceID)
			assert.Equal(t, "alice", x.User)
			assert.Equal(t, "req-7", x.RequestID)
			assert.Equal(t, tt.fault, x.Fault)
			assert.Equal(t, tt.fault.Kind.Forwards(), x.Forwarded)
			assert.Equal(t, tt.wantDelivered, x.Delivered)
			if tt.async {
				assert.Equal(t, http.StatusAccepted, x.BrokerStatus)
				assert.NotEmpty(t, x.OperationKey)
			}
			assert.Contains(t, string(x.Body), fakebroker.PlanSmallID)
			assert.Len(t, seen, 1)
		})
	}
}

func TestStopRefusesUntilResume(t *testing.T) {
	b, p, c := through(t, 2*time.Second)
	_, err := c.Catalog(context.Background(), meta)
	require.NoError(t, err)
	p.Stop()
	_, err = c.Provision(context.Background(), meta, provision("i1"))
	require.Error(t, err, "nothing listens")
	_, held := b.Instance("i1")
	assert.False(t, held)
	require.NoError(t, p.Resume())
	_, err = c.Provision(context.Background(), meta, provision("i1"))
	require.NoError(t, err, "the same address answers again")
	_, held = b.Instance("i1")
	assert.True(t, held)
}

// TestStopAfterLetsTheRequestsOfSomeOpsEnd: a broker stopped after the
// update it is answering, not before: the answer arrives; new requests
// are refused.
func TestStopAfterLetsTheRequestsOfSomeOpsEnd(t *testing.T) {
	b, p, c := through(t, 5*time.Second)
	_, err := c.Provision(context.Background(), meta, provision("i1"))
	require.NoError(t, err)
	b.Always(fakebroker.OpUpdate, fakebroker.Respond{Delay: 300 * time.Millisecond})
	done := make(chan error, 1)
	go func() {
		_, err := c.Update(context.Background(), meta, osbclient.UpdateRequest{InstanceID: "i1", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanLargeID})
		done <- err
	}()
	_, err = b.WaitForCalls(context.Background(), fakebroker.OpUpdate, 1)
	require.NoError(t, err)
	p.StopAfter([]osbclient.Op{osbclient.OpUpdate}, 10*time.Second)
	require.NoError(t, <-done, "the update in flight got its answer")
	_, err = c.Catalog(context.Background(), meta)
	assert.Error(t, err, "and the broker is stopped")
}

func TestOperation(t *testing.T) {
	tests := []struct {
		method, path      string
		op                osbclient.Op
		instance, binding string
	}{
		{"GET", "/v2/catalog", osbclient.OpCatalog, "", ""},
		{"PUT", "/v2/service_instances/i", osbclient.OpProvision, "i", ""},
		{"PATCH", "/v2/service_instances/i", osbclient.OpUpdate, "i", ""},
		{"DELETE", "/v2/service_instances/i", osbclient.OpDeprovision, "i", ""},
		{"GET", "/v2/service_instances/i", osbclient.OpGetInstance, "i", ""},
		{"GET", "/v2/service_instances/i/last_operation", osbclient.OpInstanceLastOperation, "i", ""},
		{"PUT", "/v2/service_instances/i/service_bindings/b", osbclient.OpBind, "i", "b"},
		{"DELETE", "/v2/service_instances/i/service_bindings/b", osbclient.OpUnbind, "i", "b"},
		{"GET", "/v2/service_instances/i/service_bindings/b", osbclient.OpGetBinding, "i", "b"},
		{"GET", "/v2/service_instances/i/service_bindings/b/last_operation", osbclient.OpBindingLastOperation, "i", "b"},
		{"PATCH", "/v2/service_instances/i/service_bindings/b", "", "i", "b"},
		{"GET", "/healthz", "", "", ""},
		{"GET", "/v2/service_instances/", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			op, instance, binding := operation(tt.method, tt.path)
			assert.Equal(t, tt.op, op)
			if tt.op != "" {
				assert.Equal(t, tt.instance, instance)
				assert.Equal(t, tt.binding, binding)
			}
		})
	}
}
