package conformance

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/bundle"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/registry"
	"github.com/lockstep-dev/lockstep/test/framework"
)

// restarted starts a second broker process on the first one's store, as a
// broker restarted after a crash would: the store holds the first one's
// running job, and the first one is, as far as the store can tell, gone.
func restarted(t *testing.T, h *harness) *harness {
	t.Helper()
	h2 := &harness{t: t, exec: newControlExecutor(), store: h.store, regDir: h.regDir, logs: &framework.LogBuffer{}}
	b, err := embedded.New(embedded.Config{
		Store: h.store, Registries: []registry.Registry{registry.NewLocal("test", h.regDir, 0)},
		Executor: h2.exec, WorkDir: t.TempDir(), Username: username, Password: password,
		SyncPeriod: -1, SweepPeriod: -1, HeartbeatInterval: -1, BootstrapTimeout: -1,
		Logger: newLogger(h2.logs),
	})
	require.NoError(t, err)
	require.NotEqual(t, h.broker.RunnerID(), b.RunnerID())
	h2.broker = b
	require.NoError(t, b.Start(context.Background()))
	h2.srv = httptest.NewServer(b)
	t.Cleanup(func() {
		h2.srv.Close()
		require.NoError(t, b.Close())
	})
	return h2
}

func TestRestartDuringAnAsynchronousJob(t *testing.T) {
	tests := []struct {
		name    string
		action  bundle.Action
		binding string
		start   func(h *harness) reply
		// after checks what the restarted broker says about the target.
		after func(t *testing.T, h *harness)
	}{
		{
			name: "provision", action: bundle.Provision,
			start: func(h *harness) reply {
				return h.do("PUT", instPath("i-x")+"?accepts_incomplete=true", quick(map[string]any{"size": 1}))
			},
			after: func(t *testing.T, h *harness) {
				requireStatus(t, http.StatusNotFound, h.do("GET", instPath("i-x"), nil))
				requireStatus(t, http.StatusOK, h.do("DELETE", instPath("i-x")+"?"+quickQuery, nil), "cleanup by deprovisioning")
			},
		},
		{
			name: "update", action: bundle.Update,
			start: func(h *harness) reply {
				h.provision("i-x", map[string]any{"size": 1})
				return h.do("PATCH", instPath("i-x")+"?accepts_incomplete=true", map[string]any{"service_id": "svc-quick", "parameters": map[string]any{"size": 2}})
			},
			after: func(t *testing.T, h *harness) {
				g := h.do("GET", instPath("i-x"), nil)
				requireStatus(t, http.StatusOK, g)
				assert.Equal(t, map[string]any{"size": float64(1)}, g.body["parameters"], "the update never took effect")
				requireStatus(t, http.StatusOK, h.do("PATCH", instPath("i-x"), map[string]any{"service_id": "svc-quick", "parameters": map[string]any{"size": 2}}), "the instance is free again")
			},
		},
		{
			name: "bind", action: bundle.Bind, binding: "b1",
			start: func(h *harness) reply {
				h.provision("i-x", map[string]any{"size": 1})
				return h.do("PUT", bindPath("i-x", "b1")+"?accepts_incomplete=true", quickBind(nil))
			},
			after: func(t *testing.T, h *harness) {
				requireStatus(t, http.StatusNotFound, h.do("GET", bindPath("i-x", "b1"), nil))
				requireStatus(t, http.StatusOK, h.do("DELETE", bindPath("i-x", "b1")+"?"+quickQuery, nil), "cleanup by unbinding")
			},
		},
		{
			name: "deprovision", action: bundle.Deprovision,
			start: func(h *harness) reply {
				h.provision("i-x", map[string]any{"size": 1})
				return h.do("DELETE", instPath("i-x")+"?accepts_incomplete=true&"+quickQuery, nil)
			},
			after: func(t *testing.T, h *harness) {
				requireStatus(t, http.StatusOK, h.do("GET", instPath("i-x"), nil), "still there")
				requireStatus(t, http.StatusOK, h.do("DELETE", instPath("i-x")+"?"+quickQuery, nil), "deprovision again")
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, async)
			release := h.exec.hold(t, tt.action, "i-x", tt.binding)
			r := tt.start(h)
			requireStatus(t, http.StatusAccepted, r)
			op := r.str("operation")
			h.exec.waitStarted(t, tt.action, "i-x", tt.binding)

			path := instPath("i-x")
			if tt.binding != "" {
				path = bindPath("i-x", tt.binding)
			}
			h2 := restarted(t, h)
			lo := h2.do("GET", path+"/last_operation?operation="+op, nil)
			requireStatus(t, http.StatusOK, lo)
			assert.Equal(t, "failed", lo.str("state"), "never in progress forever")
			assert.Contains(t, lo.str("description"), "stopped before it finished, so its outcome is unknown")
			assert.Zero(t, h2.exec.ran(tt.action, "i-x", tt.binding), "the restarted broker does not re-run an action whose outcome is unknown")
			tt.after(t, h2)

			// The first process's action ends after all: its outcome is
			// not recorded over what the restarted broker decided.
			release()
			require.Eventually(t, func() bool { return runningJobs(h) == 0 }, 10*time.Second, 10*time.Millisecond)
			lo = h2.do("GET", path+"/last_operation", nil)
			assert.NotEqual(t, "in progress", lo.str("state"))
			assert.NotContains(t, h.logs.String(), `"level":"ERROR","msg":"record the outcome`, "the late outcome is dropped quietly")
		})
	}
}

func runningJobs(h *harness) int {
	r := h.do("GET", "/healthz", nil)
	n, _ := r.body["jobs_running"].(float64)
	return int(n)
}

func TestRestartResumesADeferredProvision(t *testing.T) {
	ctx := context.Background()
	storePath := filepath.Join(t.TempDir(), "broker.db")
	h1 := newHarness(t, onStore(storePath), noInitialSync, withConfig(func(c *embedded.Config) {
		c.Registries = []registry.Registry{registry.NewLocal("test", filepath.Join(t.TempDir(), "absent"), 0)}
	}))
	r := h1.do("PUT", instPath("i-def")+"?accepts_incomplete=true", quick(map[string]any{"size": 1}))
	requireStatus(t, http.StatusAccepted, r)
	op := r.str("operation")
	h1.srv.Close()
	require.NoError(t, h1.broker.Close(), "a clean stop leaves the deferred provision pending")

	h2 := newHarness(t, onStore(storePath), noInitialSync)
	lo := h2.do("GET", instPath("i-def")+"/last_operation?operation="+op, nil)
	assert.Equal(t, "in progress", lo.str("state"))
	h2.broker.Sync(ctx)
	h2.waitLastOperation(instPath("i-def"), "succeeded")
	assert.Equal(t, 1, h2.exec.ran(bundle.Provision, "i-def", ""), "resumed by the restarted broker")
	requireStatus(t, http.StatusOK, h2.do("GET", instPath("i-def"), nil))
	h2.srv.Close()
	require.NoError(t, h2.broker.Close())

	// Restarted again, bootstrapping, with the instance's registry
	// unreachable: a repeat of the provision is answered from the record.
	h3 := newHarness(t, onStore(storePath), noInitialSync, withConfig(func(c *embedded.Config) {
		c.Registries = []registry.Registry{registry.NewLocal("test", filepath.Join(t.TempDir(), "absent"), 0)}
	}))
	require.False(t, h3.broker.Bootstrapped())
	requireStatus(t, http.StatusOK, h3.do("PUT", instPath("i-def"), quick(map[string]any{"size": 1})))
	r = h3.do("PUT", instPath("i-new"), quick(map[string]any{"size": 1}))
	requireStatus(t, http.StatusCreated, r, "the spec is known from the store")
}
