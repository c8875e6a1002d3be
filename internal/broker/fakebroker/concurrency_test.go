package fakebroker

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/internal/broker/osbclient"
)

func TestMaxInFlightCountsOverlappingChanges(t *testing.T) {
	b := New(t, WithLatency(100*time.Millisecond))
	c, err := osbclient.New(b.Config())
	require.NoError(t, err)
	t.Cleanup(c.Close)
	b.PutInstance(Instance{ID: "i1", ServiceID: ServiceDBID, PlanID: PlanSmallID})

	update := func() {
		_, _ = c.Update(context.Background(), osbclient.RequestMeta{}, osbclient.UpdateRequest{InstanceID: "i1", ServiceID: ServiceDBID, PlanID: PlanLargeID})
	}
	update()
	assert.Equal(t, 1, b.MaxInFlight("i1"))

	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); update() }()
	}
	wg.Wait()
	assert.Greater(t, b.MaxInFlight("i1"), 1, "overlapping updates are counted")
	b.ResetCalls()
	assert.Zero(t, b.MaxInFlight("i1"))
}
