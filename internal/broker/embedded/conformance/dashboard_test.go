package conformance

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded"
)

// OSB 2.17: a broker that gives a dashboard URL gives it with the first
// answer to a provision, an asynchronous one too. An action that writes
// its dashboard URL first has it in the 202 (sent at the end of the sync
// window, long after the action wrote it), however long it runs after;
// the URL stays the instance's.
func TestAsyncProvisionAnswersWithTheDashboardURL(t *testing.T) {
	h := newHarness(t, withBundles(map[string]string{}), noInitialSync,
		withConfig(func(c *embedded.Config) { c.Executor = nil; c.SyncWindow = 2 * time.Second }))
	release := filepath.Join(t.TempDir(), "release")
	writeBundleDir(t, filepath.Join(h.regDir, "slow"), `{
  "name": "slow", "id": "svc-slow", "description": "a provision slower than the sync window",
  "plans": [{"id": "plan-slow", "name": "default", "description": "default"}]
}`, map[string]string{"provision": `#!/bin/sh
printf '{"dashboard_url":"https://slow.example/%s"}' "$LOCKSTEP_INSTANCE_ID" > "$LOCKSTEP_OUTPUT_FILE"
while [ ! -e "$param_release" ]; do sleep 0.05; done
`})
	h.broker.Sync(context.Background())

	r := h.do("PUT", instPath("i-slow")+"?accepts_incomplete=true", map[string]any{"service_id": "svc-slow", "plan_id": "plan-slow",
		"organization_guid": "org", "space_guid": "space", "parameters": map[string]any{"release": release}})
	requireStatus(t, http.StatusAccepted, r)
	assert.Equal(t, "https://slow.example/i-slow", r.str("dashboard_url"), "in the first answer")
	require.NoError(t, os.WriteFile(release, nil, 0o600))
	h.waitLastOperation(instPath("i-slow"), "succeeded")
	g := h.do("GET", instPath("i-slow"), nil)
	requireStatus(t, http.StatusOK, g)
	assert.Equal(t, "https://slow.example/i-slow", g.str("dashboard_url"))
}
