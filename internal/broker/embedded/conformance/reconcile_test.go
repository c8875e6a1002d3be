package conformance

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/bundle"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/registry"
)

func (h *harness) catalogNames() []string {
	h.t.Helper()
	r := h.do("GET", "/v2/catalog", nil)
	requireStatus(h.t, http.StatusOK, r)
	var names []string
	for _, s := range r.body["services"].([]any) {
		names = append(names, s.(map[string]any)["name"].(string))
	}
	return names
}

func TestSpecRemovedWhileAnInstanceUsesIt(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	h.provision("i-r", map[string]any{"size": 1, "region": "eu"})
	requireStatus(t, http.StatusCreated, h.do("PUT", bindPath("i-r", "b1"), quickBind(nil)))

	require.NoError(t, os.RemoveAll(filepath.Join(h.regDir, "quick")))
	rep := h.broker.Sync(ctx)
	assert.Equal(t, []string{"svc-quick"}, rep.Registries[0].Marked)

	assert.Equal(t, []string{"slow"}, h.catalogNames(), "a removed spec is hidden from the catalog")
	r := h.do("PUT", instPath("i-new"), quick(map[string]any{"size": 1}))
	requireStatus(t, http.StatusBadRequest, r)
	assert.Contains(t, r.str("description"), `service "quick" (svc-quick) was removed from the catalog (removed from registry "test")`)
	assert.Contains(t, r.str("description"), "accepts no new provisions")

	// The existing instance lives on.
	requireStatus(t, http.StatusOK, h.do("PUT", instPath("i-r"), quick(map[string]any{"size": 1, "region": "eu"})), "identical repeat")
	requireStatus(t, http.StatusOK, h.do("PATCH", instPath("i-r"), map[string]any{"service_id": "svc-quick", "parameters": map[string]any{"size": 2}}))
	requireStatus(t, http.StatusCreated, h.do("PUT", bindPath("i-r", "b2"), quickBind(nil)))
	requireStatus(t, http.StatusOK, h.do("GET", bindPath("i-r", "b2"), nil))

	deleted, err := h.broker.Sweep(ctx)
	require.NoError(t, err)
	assert.Empty(t, deleted, "the sweep keeps a removed spec while an instance uses it")

	requireStatus(t, http.StatusOK, h.do("DELETE", bindPath("i-r", "b1")+"?"+quickQuery, nil))
	requireStatus(t, http.StatusOK, h.do("DELETE", bindPath("i-r", "b2")+"?"+quickQuery, nil))
	requireStatus(t, http.StatusOK, h.do("DELETE", instPath("i-r")+"?"+quickQuery, nil))

	deleted, err = h.broker.Sweep(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"svc-quick"}, deleted, "swept once unused")
	r = h.do("PUT", instPath("i-new"), quick(map[string]any{"size": 1}))
	requireStatus(t, http.StatusBadRequest, r)
	assert.Contains(t, r.str("description"), `service_id "svc-quick" is not in the broker's catalog`)
}

func TestRegistryDown(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name        string
		failures    int
		wantCatalog []string
	}{
		{"fewer failures than the threshold change nothing", 2, []string{"quick", "slow"}},
		{"at the threshold the unused specs are marked", 3, []string{"quick"}},
		{"more failures than the threshold keep the used spec", 5, []string{"quick"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, withConfig(func(c *embedded.Config) { c.FailureThreshold = 3 }))
			h.provision("i-used", map[string]any{"size": 1})
			gone := h.regDir + ".unreachable"
			require.NoError(t, os.Rename(h.regDir, gone))
			for i := 1; i <= tt.failures; i++ {
				rep := h.broker.Sync(ctx)
				require.Error(t, rep.Registries[0].Err)
				assert.Equal(t, i, rep.Registries[0].Failures)
			}
			assert.Equal(t, tt.wantCatalog, h.catalogNames())
			deleted, err := h.broker.Sweep(ctx)
			require.NoError(t, err)
			requireStatus(t, http.StatusOK, h.do("PATCH", instPath("i-used"), map[string]any{"service_id": "svc-quick", "parameters": map[string]any{"size": 2}}),
				"the instance is not affected by its registry's failures")

			r := h.do("PUT", instPath("i-slow")+"?accepts_incomplete=true", slow())
			if len(tt.wantCatalog) == 2 {
				assert.Empty(t, deleted, "a failed fetch deletes nothing")
				requireStatus(t, http.StatusCreated, r)
				return
			}
			assert.Equal(t, []string{"svc-slow"}, deleted, "the marked unused spec is swept")
			requireStatus(t, http.StatusBadRequest, r)

			// The registry comes back: everything is offered again.
			require.NoError(t, os.Rename(gone, h.regDir))
			h.broker.Sync(ctx)
			assert.Equal(t, []string{"quick", "slow"}, h.catalogNames())
			requireStatus(t, http.StatusCreated, h.do("PUT", instPath("i-slow")+"?accepts_incomplete=true", slow()))
		})
	}
}

func TestRegistryDownMarkReason(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, withConfig(func(c *embedded.Config) { c.FailureThreshold = 1 }))
	require.NoError(t, os.RemoveAll(h.regDir))
	h.broker.Sync(ctx)
	r := h.do("PUT", instPath("i")+"?accepts_incomplete=true", slow())
	requireStatus(t, http.StatusBadRequest, r)
	assert.Contains(t, r.str("description"), `registry "test" failed 1 consecutive fetches`)
}

func TestProvisionDuringBootstrap(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name      string
		arrives   map[string]string // bundles the registry offers at its first answer; nil: it never answers
		params    map[string]any
		wantState string
		wantDesc  string
	}{
		{"the spec arrives and the provision runs", map[string]string{"quick": quickManifest}, map[string]any{"size": 1}, "succeeded", "provision succeeded"},
		{"the spec is gone and the provision fails", map[string]string{"slow": slowManifest}, map[string]any{"size": 1}, "failed", "is not offered by any registry of this broker"},
		{"the spec arrives but the parameters do not fit it", map[string]string{"quick": quickManifest}, map[string]any{"size": 0}, "failed", "create schema"},
		{"the registry never answers and the bootstrap times out", nil, map[string]any{"size": 1}, "failed", "is not offered by any registry of this broker"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			regDir := filepath.Join(t.TempDir(), "registry") // absent for now
			h := newHarness(t, noInitialSync, withConfig(func(c *embedded.Config) {
				c.Registries = []registry.Registry{registry.NewLocal("late", regDir, 0)}
				c.FailureThreshold = 3
			}))
			require.False(t, h.broker.Bootstrapped())

			r := h.do("PUT", instPath("i-boot"), quick(tt.params))
			requireStatus(t, http.StatusUnprocessableEntity, r)
			assert.Equal(t, "AsyncRequired", r.str("error"))
			assert.Contains(t, r.str("description"), "still loading its service specs")

			r = h.do("PUT", instPath("i-boot")+"?accepts_incomplete=true", quick(tt.params))
			requireStatus(t, http.StatusAccepted, r)
			op := r.str("operation")
			r = h.do("PUT", instPath("i-boot")+"?accepts_incomplete=true", quick(tt.params))
			requireStatus(t, http.StatusAccepted, r)
			assert.Equal(t, op, r.str("operation"))
			requireStatus(t, http.StatusNotFound, h.do("GET", instPath("i-boot"), nil))

			h.broker.Sync(ctx) // the registry does not answer yet
			lo := h.do("GET", instPath("i-boot")+"/last_operation?operation="+op, nil)
			assert.Equal(t, "in progress", lo.str("state"))
			assert.Contains(t, lo.str("description"), "waiting for the broker to load")
			assert.False(t, h.broker.Bootstrapped())

			if tt.arrives == nil {
				h.broker.EndBootstrap(ctx)
			} else {
				for dir, m := range tt.arrives {
					writeBundleDir(t, filepath.Join(regDir, dir), m, nil)
				}
				h.broker.Sync(ctx)
				assert.True(t, h.broker.Bootstrapped())
			}
			lo = h.waitLastOperation(instPath("i-boot"), tt.wantState)
			assert.Contains(t, lo.str("description"), tt.wantDesc)
			if tt.wantState == "succeeded" {
				requireStatus(t, http.StatusOK, h.do("GET", instPath("i-boot"), nil))
				return
			}
			// Nothing ran, so there is nothing to undo.
			requireStatus(t, http.StatusOK, h.do("DELETE", instPath("i-boot")+"?"+quickQuery, nil))
			assert.Zero(t, h.exec.ran(bundle.Deprovision, "i-boot", ""), "no deprovision of what was never provisioned")
			assert.Zero(t, h.exec.ran(bundle.Provision, "i-boot", ""))
			requireStatus(t, http.StatusGone, h.do("GET", instPath("i-boot")+"/last_operation", nil))
		})
	}
}
