package fakebroker_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
	"github.com/lockstep-dev/lockstep/internal/broker/osbclient"
)

func TestRecording(t *testing.T) {
	b := fakebroker.New(t)
	o := newOSB(t, b)
	require.Equal(t, 201, o.provision("i1", small, `{"storageGB": 2}`))
	require.Equal(t, 201, o.bind("i1", "b1", ``))
	require.Equal(t, 200, o.getInstance("i1"))
	require.Equal(t, 409, o.provision("i1", large, ``))

	assert.Equal(t, 4, b.Count())
	assert.Equal(t, 2, b.Count(fakebroker.OpProvision))
	assert.Equal(t, 3, b.Count(fakebroker.OpProvision, fakebroker.OpBind))
	assert.Zero(t, b.Count(fakebroker.OpUnbind))

	calls := b.Calls(fakebroker.OpProvision)
	require.Len(t, calls, 2)
	first := calls[0]
	assert.Equal(t, fakebroker.OpProvision, first.Op)
	assert.Equal(t, "PUT", first.Method)
	assert.Equal(t, "/v2/service_instances/i1", first.Path)
	assert.Equal(t, "i1", first.InstanceID)
	assert.Empty(t, first.BindingID)
	assert.Equal(t, "true", first.Query.Get("accepts_incomplete"))
	assert.Equal(t, "2.17", first.Header.Get(osbapi.HeaderAPIVersion))
	assert.Equal(t, "req-1", first.Header.Get(osbapi.HeaderRequestIdentity))
	assert.Equal(t, map[string]any{"storageGB": float64(2)}, first.JSON["parameters"])
	assert.JSONEq(t, string(first.Body), `{"service_id": "db-service-id", "plan_id": "db-small-plan-id",
		"context": {"platform": "kubernetes", "namespace": "ns"}, "parameters": {"storageGB": 2},
		"organization_guid": "`+osbapi.Context{Namespace: "ns"}.OrganizationGUID()+`",
		"space_guid": "`+osbapi.Context{Namespace: "ns"}.SpaceGUID()+`"}`)
	assert.Equal(t, 201, first.Status)
	assert.Equal(t, 409, calls[1].Status)

	all := b.Calls()
	require.Len(t, all, 4)
	assert.Equal(t, []fakebroker.Op{fakebroker.OpProvision, fakebroker.OpBind, fakebroker.OpGetInstance, fakebroker.OpProvision},
		[]fakebroker.Op{all[0].Op, all[1].Op, all[2].Op, all[3].Op}, "oldest first")
	assert.Equal(t, "b1", all[1].BindingID)
	assert.Nil(t, all[2].JSON, "no body, no JSON")

	last, ok := b.LastCall(fakebroker.OpProvision)
	require.True(t, ok)
	assert.Equal(t, 409, last.Status)
	_, ok = b.LastCall(fakebroker.OpUnbind)
	assert.False(t, ok)

	// Copies: changing them changes nothing recorded.
	calls[0].Header.Set(osbapi.HeaderAPIVersion, "x")
	calls[0].JSON["plan_id"] = "x"
	calls[0].Query.Set("accepts_incomplete", "x")
	again := b.Calls(fakebroker.OpProvision)[0]
	assert.Equal(t, "2.17", again.Header.Get(osbapi.HeaderAPIVersion))
	assert.Equal(t, small, again.JSON["plan_id"])
	assert.Equal(t, "true", again.Query.Get("accepts_incomplete"))

	b.ResetCalls()
	assert.Zero(t, b.Count())
	assert.Empty(t, b.Calls())
}

func TestWaitForCalls(t *testing.T) {
	b := fakebroker.New(t)
	c := newClient(t, b)
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			_, err := c.Catalog(testCtx(t), meta)
			assert.NoError(t, err)
		})
	}
	calls, err := b.WaitForCalls(testCtx(t), fakebroker.OpCatalog, 3)
	require.NoError(t, err)
	assert.Len(t, calls, 3)
	wg.Wait()

	ctx, cancel := context.WithTimeout(testCtx(t), 20*time.Millisecond)
	defer cancel()
	calls, err = b.WaitForCalls(ctx, fakebroker.OpCatalog, 4)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), "waited for 4 catalog request(s), got 3")
	assert.Len(t, calls, 3)
}

func TestConcurrentRequests(t *testing.T) {
	b := fakebroker.New(t)
	c := newClient(t, b)
	const n = 20
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			id := string(rune('a' + i))
			_, err := c.Provision(testCtx(t), meta, provision(id, small, ``))
			assert.NoError(t, err)
			_, err = c.Bind(testCtx(t), meta, bind(id, "b", ``))
			assert.NoError(t, err)
			_ = b.Instances()
			_ = b.Calls()
		})
	}
	wg.Wait()
	assert.Len(t, b.Instances(), n)
	assert.Len(t, b.Bindings(), n)
	assert.Equal(t, n, b.Count(fakebroker.OpProvision))
	assert.Equal(t, n, b.Count(fakebroker.OpBind))
}

func TestConfigReachesTLSBrokerWithAuth(t *testing.T) {
	b := fakebroker.New(t, fakebroker.WithTLS(), fakebroker.WithBearerToken("tok"))
	cfg := b.Config()
	assert.Equal(t, osbclient.BearerAuth("tok"), cfg.Auth)
	assert.NotEmpty(t, cfg.CABundle)
	_, err := newClient(t, b).Catalog(testCtx(t), meta)
	require.NoError(t, err)

	plain := fakebroker.New(t)
	assert.Nil(t, plain.CABundle())
}
