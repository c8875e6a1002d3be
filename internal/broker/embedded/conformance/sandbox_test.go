package conformance

import (
	"context"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/executor"
)

// The sandbox bundle's actions run as the broker's action users, within
// the broker's maxima and the bundle's own limits. Its provision does
// what the parameter probe says:
//
//   - reach: tries to read the broker's store (parameter store), the
//     broker's environment (the variable named by parameter secret, in its
//     own environment or /proc/<broker>/environ; /proc/1/environ) and the
//     run directories (parameter runs); it fails naming what it reached,
//     and succeeds when it reached nothing;
//   - memory, processes, cpu: needs more of it than it may have.
//
// The sleepy bundle's provision sleeps longer than its timeout.
const sandboxManifest = `{
  "name": "sandbox", "id": "svc-sandbox", "description": "actions that try their bounds", "bindable": true,
  "timeout": "2m", "limits": {"memory": "64Mi", "cpu": "1s", "processes": 4},
  "plans": [{"id": "plan-sandbox", "name": "default", "description": "default"}]
}`

const sandboxProvision = `#!/bin/sh
case "$param_probe" in
reach)
  reached=""
  env | grep -q "^$param_secret=" && reached="$reached environment"
  tr '\0' '\n' < /proc/$PPID/environ 2>/dev/null | grep -q "^$param_secret=" && reached="$reached broker-environ"
  cat /proc/1/environ >/dev/null 2>&1 && reached="$reached init-environ"
  cat "$param_store" >/dev/null 2>&1 && reached="$reached store"
  ls "$param_runs" >/dev/null 2>&1 && reached="$reached runs"
  if [ -n "$reached" ]; then echo "reached:$reached" >&2; exit 1; fi ;;
memory) dd if=/dev/zero of=/dev/null bs=300M count=1 ;;
processes) for i in 1 2 3 4 5 6 7 8; do sleep 30 & done; wait ;;
cpu) while :; do :; done ;;
esac
`

const sleepyManifest = `{
  "name": "sleepy", "id": "svc-sleepy", "description": "sleeps too long", "bindable": false, "timeout": "1s",
  "plans": [{"id": "plan-sleepy", "name": "default", "description": "default"}]
}`

// greedyManifest asks for more memory than the broker allows.
const greedyManifest = `{
  "name": "greedy", "id": "svc-greedy", "description": "asks for too much", "bindable": false,
  "limits": {"memory": "4Gi"},
  "plans": [{"id": "plan-greedy", "name": "default", "description": "default"}]
}`

// sandboxHarness is a broker whose actions run as users of their own,
// with a maximum of 256Mi of memory, serving the sandbox and greedy
// bundles. Its store and work directory are where the action users could
// reach them, were it not for their modes.
func sandboxHarness(t *testing.T) (*harness, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatalf("this test runs actions as users of their own, which needs root (CAP_SETUID, CAP_SETGID); make test runs as root")
	}
	base := t.TempDir()
	require.NoError(t, os.Chmod(filepath.Dir(base), 0o711))
	require.NoError(t, os.Chmod(base, 0o755))
	users := executor.Users{First: 200000 + rand.IntN(1<<20)*64, Count: 4}
	h := newHarness(t, withBundles(map[string]string{"greedy": greedyManifest}), noInitialSync, onStore(filepath.Join(base, "broker.db")),
		withConfig(func(c *embedded.Config) {
			c.Executor = nil
			c.WorkDir = filepath.Join(base, "work")
			c.ActionUsers = users
			c.MaxConcurrentJobs = users.Count
			c.ActionMax = executor.Limits{Memory: 256 << 20, Time: 5 * time.Minute}
		}))
	writeBundleDir(t, filepath.Join(h.regDir, "sandbox"), sandboxManifest, map[string]string{"provision": sandboxProvision})
	writeBundleDir(t, filepath.Join(h.regDir, "sleepy"), sleepyManifest, map[string]string{"provision": "#!/bin/sh\nsleep 60\n"})
	h.broker.Sync(context.Background())
	return h, base
}

func sandboxed(probe string, params map[string]any) map[string]any {
	if probe == "time" {
		return map[string]any{"service_id": "svc-sleepy", "plan_id": "plan-sleepy", "organization_guid": "org", "space_guid": "space"}
	}
	p := map[string]any{"probe": probe}
	for k, v := range params {
		p[k] = v
	}
	return map[string]any{"service_id": "svc-sandbox", "plan_id": "plan-sandbox", "parameters": p,
		"organization_guid": "org", "space_guid": "space"}
}

// TestActionsAreSandboxed: an action cannot read the broker's store, its
// environment or other runs, and one that needs more than its limits
// fails, the operation saying why.
func TestActionsAreSandboxed(t *testing.T) {
	t.Setenv("LOCKSTEP_BROKER_PASSWORD", "s3cret") // in the broker process's environment
	h, base := sandboxHarness(t)

	r := h.do("PUT", instPath("reach"), sandboxed("reach", map[string]any{
		"secret": "LOCKSTEP_BROKER_PASSWORD", "store": filepath.Join(base, "broker.db"), "runs": filepath.Join(base, "work", "runs"),
	}))
	requireStatus(t, http.StatusCreated, r, "the action reached nothing of the broker's: "+r.raw)

	tests := []struct {
		probe string
		want  string
	}{
		{"memory", "provision failed: dd: memory exhausted by input buffer of size 314572800 bytes (300 MiB) (the action's limits: 64Mi of memory and 1s of CPU time per process, 4 processes)"},
		{"processes", "Cannot fork (the action's limits: 64Mi of memory and 1s of CPU time per process, 4 processes)"},
		{"cpu", "provision failed: stopped at its CPU time limit (1s per process)"},
		{"time", "provision timed out after 1s and was stopped (its processes were killed)"},
	}
	for _, tt := range tests {
		t.Run(tt.probe, func(t *testing.T) {
			r := h.do("PUT", instPath(tt.probe)+"?accepts_incomplete=true", sandboxed(tt.probe, nil))
			require.Contains(t, []int{http.StatusAccepted, http.StatusInternalServerError}, r.status, r.raw)
			desc := r.str("description")
			if r.status == http.StatusAccepted {
				// As long as the action takes to reach its limit: a second
				// of CPU time takes longer on a busy machine.
				var last reply
				require.Eventually(t, func() bool {
					last = h.do("GET", instPath(tt.probe)+"/last_operation", nil)
					return last.str("state") == "failed"
				}, 2*time.Minute, 20*time.Millisecond, "the provision never failed: %s", last.raw)
				desc = last.str("description")
			}
			assert.Contains(t, desc, tt.want)
			assert.True(t, strings.HasPrefix(desc, "provision "), desc)
		})
	}
}

// TestABundleAskingForMoreThanTheMaximumIsRefused: the registry's bundle
// that asks for more than the broker allows is not served, and the
// broker's health says why.
func TestABundleAskingForMoreThanTheMaximumIsRefused(t *testing.T) {
	h, _ := sandboxHarness(t)
	assert.ElementsMatch(t, []string{"sandbox", "sleepy"}, h.catalogNames())
	rec := h.do("GET", "/healthz", nil)
	require.Equal(t, http.StatusOK, rec.status)
	regs, _ := rec.body["registries"].([]any)
	require.Len(t, regs, 1)
	malformed, _ := regs[0].(map[string]any)["malformed"].([]any)
	require.Len(t, malformed, 1, rec.raw)
	m := malformed[0].(map[string]any)
	assert.Equal(t, "greedy", m["bundle"])
	assert.Equal(t, `bundle "greedy" asks for more than the broker's maximum: limits.memory 4Gi is more than this broker allows (256Mi, its ACTION_MAX_MEMORY setting)`, m["error"])
	r := h.do("PUT", instPath("g"), map[string]any{"service_id": "svc-greedy", "plan_id": "plan-greedy", "organization_guid": "org", "space_guid": "space"})
	assert.Equal(t, http.StatusBadRequest, r.status, r.raw)
}
