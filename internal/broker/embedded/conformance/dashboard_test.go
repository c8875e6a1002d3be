package conformance

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
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
// the URL stays the instance's. An action that writes it only after the
// 202 is a defect of its bundle: the URL appears on GET, which a platform
// that keeps the first answer never reads, and the broker logs it.
func TestAsyncProvisionAnswersWithTheDashboardURL(t *testing.T) {
	const defect = "bundle defect: the action wrote its dashboard_url after the broker's first answer"
	tests := []struct {
		name string
		// provision is the action; it ends once $param_release exists.
		provision   string
		firstAnswer string
		logged      bool
	}{
		{
			name: "written first: in the 202, nothing logged",
			provision: `#!/bin/sh
printf '{"dashboard_url":"https://slow.example/%s"}' "$LOCKSTEP_INSTANCE_ID" > "$LOCKSTEP_OUTPUT_FILE"
while [ ! -e "$param_release" ]; do sleep 0.05; done
`,
			firstAnswer: "https://slow.example/i-slow",
		},
		{
			name: "written after the sync window: not in the 202, logged as a bundle defect",
			provision: `#!/bin/sh
while [ ! -e "$param_release" ]; do sleep 0.05; done
printf '{"dashboard_url":"https://slow.example/%s"}' "$LOCKSTEP_INSTANCE_ID" > "$LOCKSTEP_OUTPUT_FILE"
`,
			logged: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, withBundles(map[string]string{}), noInitialSync,
				withConfig(func(c *embedded.Config) { c.Executor = nil; c.SyncWindow = 2 * time.Second }))
			release := filepath.Join(t.TempDir(), "release")
			writeBundleDir(t, filepath.Join(h.regDir, "slow"), `{
  "name": "slow", "id": "svc-slow", "description": "a provision slower than the sync window",
  "plans": [{"id": "plan-slow", "name": "default", "description": "default"}]
}`, map[string]string{"provision": tt.provision})
			h.broker.Sync(context.Background())

			r := h.do("PUT", instPath("i-slow")+"?accepts_incomplete=true", map[string]any{"service_id": "svc-slow", "plan_id": "plan-slow",
				"organization_guid": "org", "space_guid": "space", "parameters": map[string]any{"release": release}})
			requireStatus(t, http.StatusAccepted, r)
			assert.Equal(t, tt.firstAnswer, r.str("dashboard_url"), "in the first answer")
			require.NoError(t, os.WriteFile(release, nil, 0o600))
			h.waitLastOperation(instPath("i-slow"), "succeeded")
			g := h.do("GET", instPath("i-slow"), nil)
			requireStatus(t, http.StatusOK, g)
			assert.Equal(t, "https://slow.example/i-slow", g.str("dashboard_url"))
			// The job's outcome is logged after it is recorded: wait for
			// the action's end in the log, then read what came before.
			require.Eventually(t, func() bool { return strings.Contains(h.logs.String(), `"action finished"`) }, 10*time.Second, 10*time.Millisecond)
			logs := h.logs.String()
			if !tt.logged {
				assert.NotContains(t, logs, defect)
				return
			}
			assert.Contains(t, logs, defect)
			assert.Contains(t, logs, `"instance":"i-slow"`)
			assert.NotContains(t, logs, "https://slow.example", "the URL itself is not logged")
		})
	}
}
