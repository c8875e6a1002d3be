package broker_test

import (
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/internal/broker"
	"github.com/lockstep-dev/lockstep/internal/broker/brokertest"
)

// observed records what Config.Observe is called with.
type observed struct {
	mu      sync.Mutex
	calls   []string // "op status"
	elapsed []time.Duration
}

func (o *observed) observe(op broker.Op, status int, elapsed time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls = append(o.calls, string(op)+" "+strconv.Itoa(status))
	o.elapsed = append(o.elapsed, elapsed)
}

func TestObserveSeesEveryRequestWithItsStatus(t *testing.T) {
	b := brokertest.New(t)
	b.Script(brokertest.OpUpdate, brokertest.Respond{Status: 422, Error: "PlanChangeNotSupported"})
	o := &observed{}
	c := newClient(t, b, func(cfg *broker.Config) { cfg.Observe = o.observe })

	_, err := c.Catalog(testCtx(t), meta)
	require.NoError(t, err)
	_, err = c.Provision(testCtx(t), meta, provisionReq("i-1"))
	require.NoError(t, err)
	_, err = c.Update(testCtx(t), meta, broker.UpdateRequest{InstanceID: "i-1", ServiceID: brokertest.ServiceDBID, PlanID: brokertest.PlanLargeID})
	require.Error(t, err)

	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	refused, err := broker.New(broker.Config{URL: "http://" + addr, Observe: o.observe})
	require.NoError(t, err)
	defer refused.Close()
	_, err = refused.Provision(testCtx(t), meta, provisionReq("i-2"))
	require.Error(t, err)

	assert.Equal(t, []string{"catalog 200", "provision 201", "update 422", "provision 0"}, o.calls)
	for _, d := range o.elapsed {
		assert.Positive(t, d)
	}
}
