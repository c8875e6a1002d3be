package specs_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded/bundle"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/registry"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/specs"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/store"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/store/bboltstore"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeRegistry offers what the test sets, or fails.
type fakeRegistry struct {
	name    string
	mu      sync.Mutex
	bundles []*bundle.Bundle
	err     error
}

func (f *fakeRegistry) Name() string { return f.name }

func (f *fakeRegistry) Fetch(context.Context) (registry.Listing, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return registry.Listing{}, f.err
	}
	return registry.Listing{Bundles: append([]*bundle.Bundle(nil), f.bundles...)}, nil
}

func (f *fakeRegistry) set(err error, bs ...*bundle.Bundle) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err, f.bundles = err, bs
}

func mkBundle(t *testing.T, id, name, description string) *bundle.Bundle {
	t.Helper()
	b, err := bundle.Assemble(bundle.Manifest{Name: name, ID: id, Description: description,
		Plans: []bundle.Plan{{ID: id + "-plan", Name: "default", Description: "d"}}}, nil)
	require.NoError(t, err)
	return b
}

type env struct {
	store   store.Store
	catalog *specs.Catalog
	rec     *specs.Reconciler
	regs    map[string]*fakeRegistry
}

func newEnv(t *testing.T, threshold int, names ...string) *env {
	t.Helper()
	st, err := bboltstore.Open(filepath.Join(t.TempDir(), "s.db"), bboltstore.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return newEnvOn(t, st, threshold, names...)
}

func newEnvOn(t *testing.T, st store.Store, threshold int, names ...string) *env {
	e := &env{store: st, catalog: specs.NewCatalog(), regs: map[string]*fakeRegistry{}}
	var regs []registry.Registry
	for _, n := range names {
		f := &fakeRegistry{name: n}
		e.regs[n] = f
		regs = append(regs, f)
	}
	e.rec = specs.NewReconciler(specs.Options{Store: st, Catalog: e.catalog, Registries: regs, FailureThreshold: threshold})
	return e
}

func (e *env) addInstance(t *testing.T, id, serviceID string) {
	require.NoError(t, e.store.Update(context.Background(), func(tx store.Tx) error {
		return store.PutInstance(tx, &store.Instance{ID: id, ServiceID: serviceID, State: store.InstanceProvisioned})
	}))
}

func (e *env) deleteInstance(t *testing.T, id string) {
	require.NoError(t, e.store.Update(context.Background(), func(tx store.Tx) error { return store.DeleteInstance(tx, id) }))
}

func catalogNames(c *specs.Catalog) []string {
	var out []string
	for _, s := range c.Services() {
		out = append(out, s.Name)
	}
	return out
}

func TestSyncAddsMarksAndRestores(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, 3, "local")
	reg := e.regs["local"]
	a, b := mkBundle(t, "svc-a", "alpha", "A"), mkBundle(t, "svc-b", "beta", "B")

	reg.set(nil, a, b)
	rep := e.rec.Sync(ctx)
	require.Len(t, rep.Registries, 1)
	assert.ElementsMatch(t, []string{"svc-a", "svc-b"}, rep.Registries[0].Added)
	assert.Equal(t, []string{"alpha", "beta"}, catalogNames(e.catalog))
	assert.True(t, e.rec.Bootstrapped())

	// Unchanged: nothing to do.
	rep = e.rec.Sync(ctx)
	assert.Empty(t, rep.Registries[0].Added)

	// b leaves the registry: marked, hidden, still known.
	reg.set(nil, a)
	rep = e.rec.Sync(ctx)
	assert.Equal(t, []string{"svc-b"}, rep.Registries[0].Marked)
	assert.Equal(t, []string{"alpha"}, catalogNames(e.catalog))
	entry, ok := e.catalog.Lookup("svc-b")
	require.True(t, ok)
	assert.True(t, entry.Marked)
	assert.Contains(t, entry.MarkReason, `removed from registry "local"`)

	// b comes back changed: unmarked with its new content.
	b2 := mkBundle(t, "svc-b", "beta", "B, second edition")
	reg.set(nil, a, b2)
	rep = e.rec.Sync(ctx)
	assert.Equal(t, []string{"svc-b"}, rep.Registries[0].Unmarked)
	entry, _ = e.catalog.Lookup("svc-b")
	assert.False(t, entry.Marked)
	assert.Equal(t, "B, second edition", entry.Spec.Manifest.Description)

	// a changes content while live: replaced.
	a2 := mkBundle(t, "svc-a", "alpha", "A2")
	reg.set(nil, a2, b2)
	rep = e.rec.Sync(ctx)
	assert.Equal(t, []string{"svc-a"}, rep.Registries[0].Added)
}

func TestRegistryFailures(t *testing.T) {
	ctx := context.Background()
	down := errors.New("connection refused")
	tests := []struct {
		name       string
		failures   int
		wantMarked []string
	}{
		{"fewer failures than the threshold mark nothing", 2, nil},
		{"at the threshold the unused specs are marked", 3, []string{"svc-unused"}},
		{"more failures mark nothing more", 5, []string{"svc-unused"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, 3, "remote")
			reg := e.regs["remote"]
			reg.set(nil, mkBundle(t, "svc-used", "used", "U"), mkBundle(t, "svc-unused", "unused", "N"))
			e.rec.Sync(ctx)
			e.addInstance(t, "i1", "svc-used")

			reg.set(down)
			var marked []string
			for i := 1; i <= tt.failures; i++ {
				rep := e.rec.Sync(ctx)
				require.ErrorIs(t, rep.Registries[0].Err, down)
				assert.Equal(t, i, rep.Registries[0].Failures)
				marked = append(marked, rep.Registries[0].Marked...)
			}
			assert.Equal(t, tt.wantMarked, marked)
			for _, id := range []string{"svc-used", "svc-unused"} {
				entry, ok := e.catalog.Lookup(id)
				require.True(t, ok, "a failed fetch never deletes")
				if id == "svc-used" {
					assert.False(t, entry.Marked, "a used spec is not marked because its registry is down")
				}
			}
			if len(tt.wantMarked) > 0 {
				entry, _ := e.catalog.Lookup("svc-unused")
				assert.Contains(t, entry.MarkReason, `registry "remote" failed 3 consecutive fetches`)
				assert.Contains(t, entry.MarkReason, "connection refused")
			}

			// The registry comes back: everything is live again.
			reg.set(nil, mkBundle(t, "svc-used", "used", "U"), mkBundle(t, "svc-unused", "unused", "N"))
			rep := e.rec.Sync(ctx)
			assert.Equal(t, 0, rep.Registries[0].Failures)
			assert.Equal(t, []string{"unused", "used"}, catalogNames(e.catalog))
		})
	}
}

func TestSweep(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, 3, "local")
	reg := e.regs["local"]
	reg.set(nil, mkBundle(t, "svc-a", "alpha", "A"), mkBundle(t, "svc-b", "beta", "B"), mkBundle(t, "svc-c", "gamma", "C"))
	e.rec.Sync(ctx)
	e.addInstance(t, "i1", "svc-a")

	reg.set(nil, mkBundle(t, "svc-c", "gamma", "C")) // a (used) and b (unused) leave
	e.rec.Sync(ctx)

	deleted, err := e.rec.Sweep(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"svc-b"}, deleted)
	_, ok := e.catalog.Lookup("svc-b")
	assert.False(t, ok)
	entry, ok := e.catalog.Lookup("svc-a")
	require.True(t, ok, "a marked spec stays while an instance uses it")
	assert.True(t, entry.Marked)

	e.deleteInstance(t, "i1")
	deleted, err = e.rec.Sweep(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"svc-a"}, deleted)
	assert.Equal(t, []string{"gamma"}, catalogNames(e.catalog))
}

func TestConflictsBetweenRegistries(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, 3, "first", "second")
	e.regs["first"].set(nil, mkBundle(t, "svc-a", "alpha", "A"))
	e.regs["second"].set(nil, mkBundle(t, "svc-a", "alpha-copy", "A'"), mkBundle(t, "svc-x", "alpha", "X"), mkBundle(t, "svc-y", "yes", "Y"))
	rep := e.rec.Sync(ctx)
	require.Len(t, rep.Registries, 2)
	assert.Equal(t, []string{"svc-y"}, rep.Registries[1].Added)
	require.Len(t, rep.Registries[1].Problems, 2)
	assert.Contains(t, rep.Registries[1].Problems[0].Error(), `registry "first" already provides`)
	assert.Contains(t, rep.Registries[1].Problems[1].Error(), "names must be unique")
	entry, _ := e.catalog.Lookup("svc-a")
	assert.Equal(t, "first", entry.Registry)
}

func TestOrphansOfUnconfiguredRegistries(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, 3, "old")
	e.regs["old"].set(nil, mkBundle(t, "svc-a", "alpha", "A"))
	e.rec.Sync(ctx)

	// The same store, a broker configured without "old".
	e2 := newEnvOn(t, e.store, 3, "new")
	rep := e2.rec.Sync(ctx)
	assert.Equal(t, []string{"svc-a"}, rep.Orphans)
	entry, _ := e2.catalog.Lookup("svc-a")
	assert.Contains(t, entry.MarkReason, `registry "old" is no longer configured`)
}

func TestBootstrap(t *testing.T) {
	ctx := context.Background()
	down := errors.New("down")
	tests := []struct {
		name      string
		threshold int
		syncs     int
		end       bool
		want      bool
	}{
		{"not before a failing registry reached the threshold", 3, 2, false, false},
		{"done once the failing registry reached the threshold", 3, 3, false, true},
		{"EndBootstrap ends it at once", 3, 1, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, tt.threshold, "up", "down")
			e.regs["up"].set(nil, mkBundle(t, "svc-a", "alpha", "A"))
			e.regs["down"].set(down)
			assert.False(t, e.rec.Bootstrapped())
			for range tt.syncs {
				e.rec.Sync(ctx)
			}
			if tt.end {
				e.rec.EndBootstrap()
			}
			assert.Equal(t, tt.want, e.rec.Bootstrapped())
		})
	}
	assert.True(t, newEnv(t, 3).rec.Bootstrapped(), "no registries: nothing to wait for")
}

func TestCatalogSurvivesReload(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, 3, "local")
	e.regs["local"].set(nil, mkBundle(t, "svc-a", "alpha", "A"))
	e.rec.Sync(ctx)

	fresh := specs.NewCatalog()
	require.NoError(t, fresh.Reload(ctx, e.store))
	raw, err := json.Marshal(fresh.Services())
	require.NoError(t, err)
	assert.Contains(t, string(raw), `"name":"alpha"`)
	assert.Len(t, fresh.Entries(), 1)
}
