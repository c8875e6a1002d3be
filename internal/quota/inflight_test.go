package quota

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	clocktesting "k8s.io/utils/clock/testing"
)

// charged is q as the cache shows it once kube-apiserver charged n more
// creates to it: one more in use, a new version.
func charged(q corev1.ResourceQuota, n int64) corev1.ResourceQuota {
	q = *q.DeepCopy()
	used := q.Status.Used[instances]
	used.Add(*resource.NewQuantity(n, resource.DecimalSI))
	q.Status.Used[instances] = used
	q.ResourceVersion += "+"
	return q
}

// A create counts while it is decided, and once allowed until the cache
// shows the quota charged or the tail passed; a refused one no longer.
func TestInFlightCountsACreateUntilTheCacheShowsItCharged(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Now())
	f := &InFlight{Clock: clk, Tail: 2 * time.Second}
	q := rq("q", 2, 1) // one unit left
	admit := func(quotas ...corev1.ResourceQuota) (func(bool), *Refusal) { return f.Admit(quotas, instances, true) }

	first, refusal := admit(q)
	require.Nil(t, refusal)
	_, refusal = admit(q)
	require.NotNil(t, refusal, "the last unit is taken while the first create is decided")
	assert.Equal(t, int64(1), refusal.InFlight)
	assert.Contains(t, refusal.Error(), "used: count/serviceinstances.lockstep.dev=2, limited: count/serviceinstances.lockstep.dev=2")

	first(true)
	_, refusal = admit(q)
	require.NotNil(t, refusal, "allowed, not yet charged in the cache: still counted")
	release, refusal := admit(charged(q, 1))
	require.NotNil(t, refusal, "charged: the quota itself is full now")
	assert.Nil(t, release)
	assert.Zero(t, refusal.InFlight, "and the create is no longer counted twice")

	// A create allowed that the API server then refused: never charged,
	// counted only until the tail.
	q = rq("q2", 2, 1)
	second, refusal := admit(q)
	require.Nil(t, refusal)
	second(true)
	_, refusal = admit(q)
	require.NotNil(t, refusal)
	clk.SetTime(clk.Now().Add(2 * time.Second))
	third, refusal := admit(q)
	require.Nil(t, refusal, "past the tail the unit is free again")

	// A create refused (by the broker, by lockstep) frees its unit at once.
	third(false)
	fourth, refusal := admit(q)
	require.Nil(t, refusal)
	fourth(false)
	fourth(true) // release is idempotent
	_, refusal = admit(q)
	assert.Nil(t, refusal)
}

// A dry run is decided with what is in flight and holds nothing; a quota
// that does not cover the create holds nothing either.
func TestInFlightDryRunAndUncoveredHoldNothing(t *testing.T) {
	f := &InFlight{}
	q := rq("q", 1, 0)
	release, refusal := f.Admit([]corev1.ResourceQuota{q}, instances, false)
	require.Nil(t, refusal)
	release(true)
	assert.Zero(t, f.Len())
	release, refusal = f.Admit([]corev1.ResourceQuota{q}, "count/servicebindings.lockstep.dev", true)
	require.Nil(t, refusal)
	release(true)
	assert.Zero(t, f.Len())
}

// What no longer counts is swept, so the holds stay as few as the creates
// of the last moments.
func TestInFlightSweeps(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Now())
	f := &InFlight{Clock: clk, Tail: time.Second}
	for i := range 50 {
		release, refusal := f.Admit([]corev1.ResourceQuota{rq(fmt.Sprintf("q%d", i), 5, 0)}, instances, true)
		require.Nil(t, refusal)
		release(true)
	}
	assert.Equal(t, 50, f.Len())
	clk.SetTime(clk.Now().Add(time.Second))
	_, _ = f.Admit(nil, instances, true)
	_, _ = f.Admit([]corev1.ResourceQuota{rq("x", 5, 0)}, instances, false)
	assert.Zero(t, f.Len())
}

// Creates racing through one replica for the last units of a quota:
// exactly as many are allowed as there are units.
func TestInFlightConcurrentCreatesTakeEachUnitOnce(t *testing.T) {
	f := &InFlight{}
	q := rq("q", 5, 2)
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for range 40 {
		wg.Go(func() {
			release, refusal := f.Admit([]corev1.ResourceQuota{q}, instances, true)
			if refusal == nil {
				allowed.Add(1)
				release(true)
			}
		})
	}
	wg.Wait()
	assert.Equal(t, int64(3), allowed.Load())
}

// A quota that counts two resources counts the creates of each apart.
func TestInFlightCountsEachResourceApart(t *testing.T) {
	f := &InFlight{}
	bindings := corev1.ResourceName("count/servicebindings.lockstep.dev")
	q := rq("q", 1, 0, func(q *corev1.ResourceQuota) {
		q.Status.Hard[bindings] = resource.MustParse("1")
		q.Status.Used[bindings] = resource.MustParse("0")
	})
	_, refusal := f.Admit([]corev1.ResourceQuota{q}, instances, true)
	require.Nil(t, refusal)
	_, refusal = f.Admit([]corev1.ResourceQuota{q}, bindings, true)
	assert.Nil(t, refusal, "an instance in flight takes no binding's unit")
	_, refusal = f.Admit([]corev1.ResourceQuota{q}, instances, true)
	assert.NotNil(t, refusal)
}
