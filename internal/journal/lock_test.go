package journal

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestLocksOneHolderPerKey(t *testing.T) {
	l := NewLocks()
	defer l.Close()
	a := &Operation{ID: "a", Verb: v1alpha1.VerbUpdate, User: "alice", Started: time.Now()}
	b := &Operation{ID: "b", Verb: v1alpha1.VerbUpdate, User: "bob", Started: time.Now()}

	_, ok := l.Acquire("si/ns/db", a)
	require.True(t, ok)
	holder, ok := l.Acquire("si/ns/db", b)
	assert.False(t, ok)
	assert.Same(t, a, holder)
	_, ok = l.Acquire("si/ns/other", b)
	assert.True(t, ok, "other objects are independent")

	l.Release("si/ns/db", b) // not the holder: no effect
	_, ok = l.Acquire("si/ns/db", b)
	assert.False(t, ok)
	l.Release("si/ns/db", a)
	_, ok = l.Acquire("si/ns/db", b)
	assert.True(t, ok)
}

func TestLocksConcurrentAcquireHasOneWinner(t *testing.T) {
	l := NewLocks()
	defer l.Close()
	var wins atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, ok := l.Acquire("k", &Operation{}); ok {
				wins.Add(1)
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, int32(1), wins.Load())
}

func TestFollowHoldsTheLockUntilDone(t *testing.T) {
	l := NewLocks()
	op := &Operation{ID: "a"}
	_, ok := l.Acquire("k", op)
	require.True(t, ok)
	proceed := make(chan struct{})
	l.Follow("k", op, func(ctx context.Context, release func()) { <-proceed })

	_, ok = l.Acquire("k", &Operation{})
	assert.False(t, ok, "held while the follower runs")
	close(proceed)
	require.Eventually(t, func() bool {
		_, ok := l.Acquire("k", &Operation{})
		return ok
	}, time.Second, time.Millisecond)
	l.Close()
}

func TestCloseStopsFollowers(t *testing.T) {
	l := NewLocks()
	op := &Operation{ID: "a"}
	l.Acquire("k", op)
	l.Follow("k", op, func(ctx context.Context, release func()) { <-ctx.Done() })
	l.Close() // returns only once the follower ended
}

func TestOperationString(t *testing.T) {
	op := &Operation{ID: "op-1", Verb: v1alpha1.VerbProvision, User: "alice", Started: time.Now().Add(-3 * time.Second)}
	assert.Equal(t, `provision by "alice", started 3s ago (operation op-1)`, op.String())
}

func TestConfirmed(t *testing.T) {
	c := NewConfirmed()
	assert.False(t, c.Take("u"))
	c.Add("u")
	assert.True(t, c.Take("u"))
	assert.False(t, c.Take("u"), "taken once")
}
