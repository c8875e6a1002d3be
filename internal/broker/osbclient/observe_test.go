package osbclient_test

import (
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/broker/osbclient"
)

// observed records what Config.Observe is called with.
type observed struct {
	mu      sync.Mutex
	calls   []string // "op status"
	elapsed []time.Duration
}

func (o *observed) observe(op osbclient.Op, status int, elapsed time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls = append(o.calls, string(op)+" "+strconv.Itoa(status))
	o.elapsed = append(o.elapsed, elapsed)
}

func TestObserveSeesEveryRequestWithItsStatus(t *testing.T) {
	b := fakebroker.New(t)
	b.Script(fakebroker.OpUpdate, fakebroker.Respond{Status: 422, Error: "PlanChangeNotSupported"})
	o := &observed{}
	c := newClient(t, b, func(cfg *osbclient.Config) { cfg.Observe = o.observe })

	_, err := c.Catalog(testCtx(t), meta)
	require.NoError(t, err)
	_, err = c.Provision(testCtx(t), meta, provisionReq("i-1"))
	require.NoError(t, err)
	_, err = c.Update(testCtx(t), meta, osbclient.UpdateRequest{InstanceID: "i-1", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanLargeID})
	require.Error(t, err)

	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	refused, err := osbclient.New(osbclient.Config{URL: "http://" + addr, Observe: o.observe})
	require.NoError(t, err)
	defer refused.Close()
	_, err = refused.Provision(testCtx(t), meta, provisionReq("i-2"))
	require.Error(t, err)

	assert.Equal(t, []string{"catalog 200", "provision 201", "update 422", "provision 0"}, o.calls)
	for _, d := range o.elapsed {
		assert.Positive(t, d)
	}
}
