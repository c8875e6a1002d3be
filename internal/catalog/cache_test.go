package catalog

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
)

func entry(name string) *Entry {
	cat := fakebroker.DefaultCatalog()
	return NewEntry(name, nil, &cat, nil, time.Now())
}

func TestCacheWaitReturnsOnceLoaded(t *testing.T) {
	c := NewCache(time.Hour)
	done := make(chan *Entry)
	go func() {
		e, err := c.Wait(context.Background(), "acme")
		assert.NoError(t, err)
		done <- e
	}()
	want := entry("acme")
	c.Store(want)
	assert.Same(t, want, <-done)

	got, err := c.Wait(context.Background(), "acme")
	require.NoError(t, err)
	assert.Same(t, want, got, "a loaded catalog is returned without waiting")
	assert.Equal(t, []string{"acme"}, c.Brokers())
}

func TestCacheWaitGivesUpAtTheDeadline(t *testing.T) {
	c := NewCache(time.Hour)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := c.Wait(ctx, "acme")
	require.ErrorIs(t, err, ErrNotReady)
	assert.Contains(t, err.Error(), `broker "acme": catalog not ready, retry`)
}

func TestCacheRefreshIsRateLimited(t *testing.T) {
	c := NewCache(time.Minute)
	now := time.Unix(1000, 0)
	c.now = func() time.Time { return now }
	var fetches atomic.Int32
	c.SetFetcher(func(context.Context, string) (*Entry, error) {
		fetches.Add(1)
		return entry("acme"), nil
	})

	_, err := c.Refresh(context.Background(), "acme")
	require.NoError(t, err)
	_, err = c.Refresh(context.Background(), "acme")
	require.NoError(t, err)
	assert.Equal(t, int32(1), fetches.Load(), "the second refresh within the interval reuses the cache")

	now = now.Add(time.Minute)
	_, err = c.Refresh(context.Background(), "acme")
	require.NoError(t, err)
	assert.Equal(t, int32(2), fetches.Load())
}

func TestCacheRefreshFailureKeepsTheOldEntry(t *testing.T) {
	c := NewCache(0)
	old := entry("acme")
	c.Store(old)
	c.SetFetcher(func(context.Context, string) (*Entry, error) { return nil, errors.New("down") })
	_, err := c.Refresh(context.Background(), "acme")
	assert.ErrorContains(t, err, `refreshing the catalog of broker "acme": down`)
	got, ok := c.Get("acme")
	require.True(t, ok)
	assert.Same(t, old, got)
}

func TestCacheForget(t *testing.T) {
	c := NewCache(time.Hour)
	c.Store(entry("acme"))
	c.Forget("acme")
	_, ok := c.Get("acme")
	assert.False(t, ok)
	assert.Empty(t, c.Brokers())
}

func TestEntryFind(t *testing.T) {
	cat := fakebroker.DefaultCatalog()
	gone := osbapi.ServicePlan{Service: &cat.Services[0], Plan: &osbapi.Plan{ID: "old-id", Name: "legacy"}}
	e := NewEntry("acme", nil, &cat, []osbapi.ServicePlan{gone}, time.Now())

	p, err := e.Find("db", "small")
	require.NoError(t, err)
	assert.False(t, p.Removed)
	assert.NotNil(t, p.Schemas)
	assert.Equal(t, []string{"region"}, p.Schemas.CreateOnly())

	p, err = e.Find("db", "legacy")
	require.NoError(t, err)
	assert.True(t, p.Removed)

	_, err = e.Find("db", "huge")
	assert.ErrorContains(t, err, `plan "huge" is not offered by service "db" (its plans: small, large, fixed)`)
	assert.True(t, e.HasService("db"))
	assert.False(t, e.HasService("nope"))
}

// Find answers from an index: the same plan a scan of the catalog finds,
// the first service of a name winning, whatever the catalog's size.
func TestEntryFindAgreesWithTheCatalog(t *testing.T) {
	cat := osbapi.Catalog{Services: []osbapi.Service{
		{ID: "s1", Name: "db", Plans: []osbapi.Plan{{ID: "p1", Name: "small"}, {ID: "p2", Name: "large"}}},
		{ID: "s2", Name: "cache", Plans: []osbapi.Plan{{ID: "p3", Name: "small"}}},
		{ID: "s3", Name: "db", Plans: []osbapi.Plan{{ID: "p4", Name: "huge"}}}, // a second "db": never found
	}}
	e := NewEntry("acme", nil, &cat, nil, time.Now())
	for _, tt := range []struct{ service, plan string }{{"db", "small"}, {"db", "large"}, {"cache", "small"}, {"db", "huge"}, {"cache", "large"}} {
		want, wantErr := cat.FindPlan(tt.service, tt.plan)
		got, err := e.Find(tt.service, tt.plan)
		if wantErr != nil {
			assert.EqualError(t, err, wantErr.Error(), "%s/%s", tt.service, tt.plan)
			continue
		}
		require.NoError(t, err)
		assert.Same(t, want.Plan, got.ServicePlan.Plan, "%s/%s", tt.service, tt.plan)
		assert.Same(t, want.Service, got.ServicePlan.Service, "%s/%s", tt.service, tt.plan)
	}
}

func TestEntryRecordsUnusableSchemas(t *testing.T) {
	cat := fakebroker.DefaultCatalog()
	cat.Services[0].Plans[0].Schemas.ServiceInstance.Create.Parameters = []byte(`{"type": 12}`)
	e := NewEntry("acme", nil, &cat, nil, time.Now())
	p, err := e.Find("db", "small")
	require.NoError(t, err)
	assert.Nil(t, p.Schemas)
	require.Error(t, p.SchemaError)
	assert.Contains(t, p.SchemaError.Error(), `broker "acme" publishes an unusable parameter schema for plan "small" of service "db"`)
}
