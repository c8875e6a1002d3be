package conformance

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/store"
)

const statefulManifest = `{
  "name": "stateful", "id": "svc-stateful", "description": "keeps bundle state", "bindable": true,
  "plans": [{"id": "plan-s", "name": "default", "description": "default", "updateable": true}]
}`

// statefulActions are real shell actions that save state and write what
// state they see to a side channel (seen.log) the test reads.
func statefulActions(seen string) map[string]string {
	return map[string]string{
		"provision": `#!/bin/sh
echo "provision token=[$state_token] phase=[$state_phase]" >> ` + seen + `
printf 'token=%s\nphase=provisioned\n' "tok-$LOCKSTEP_INSTANCE_ID-s3cr3t" > "$LOCKSTEP_STATE_FILE"
echo '{"dashboard_url":"https://dash.example/'"$LOCKSTEP_INSTANCE_ID"'"}' > "$LOCKSTEP_OUTPUT_FILE"
`,
		"update": `#!/bin/sh
echo "update token=[$state_token] phase=[$state_phase]" >> ` + seen + `
echo 'phase=updated' > "$LOCKSTEP_STATE_FILE"
`,
		"bind": `#!/bin/sh
echo "bind token=[$state_token] phase=[$state_phase]" >> ` + seen + `
printf '{"credentials":{"user":"%s","password":"pw-%s"}}' "$LOCKSTEP_BINDING_ID" "$LOCKSTEP_BINDING_ID" > "$LOCKSTEP_OUTPUT_FILE"
`,
		"unbind": `#!/bin/sh
echo "unbind token=[$state_token] phase=[$state_phase]" >> ` + seen + `
`,
		"deprovision": `#!/bin/sh
echo "deprovision token=[$state_token] phase=[$state_phase]" >> ` + seen + `
`,
	}
}

func newStatefulHarness(t *testing.T) (*harness, string) {
	t.Helper()
	seen := filepath.Join(t.TempDir(), "seen.log")
	h := newHarness(t, withBundles(map[string]string{}), noInitialSync, withConfig(func(c *embedded.Config) { c.Executor = nil }))
	writeBundleDir(t, filepath.Join(h.regDir, "stateful"), statefulManifest, statefulActions(seen))
	h.broker.Sync(context.Background())
	return h, seen
}

func readSeen(t *testing.T, path string) []string {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	return strings.Split(strings.TrimSpace(string(raw)), "\n")
}

func (h *harness) state(instanceID string) map[string]string {
	h.t.Helper()
	var st map[string]string
	require.NoError(h.t, h.store.View(context.Background(), func(tx store.Tx) error {
		var err error
		st, err = store.GetState(tx, instanceID)
		return err
	}))
	return st
}

func TestBundleState(t *testing.T) {
	h, seen := newStatefulHarness(t)
	const secret = "tok-i-st-s3cr3t"
	svc := map[string]any{"service_id": "svc-stateful", "plan_id": "plan-s", "organization_guid": "org", "space_guid": "space"}
	const q = "?service_id=svc-stateful&plan_id=plan-s"
	var answers []reply
	keep := func(r reply) reply { answers = append(answers, r); return r }

	requireStatus(t, http.StatusCreated, keep(h.do("PUT", instPath("i-st"), svc)))
	assert.Equal(t, map[string]string{"token": secret, "phase": "provisioned"}, h.state("i-st"), "kept per instance")
	requireStatus(t, http.StatusOK, keep(h.do("PATCH", instPath("i-st"), map[string]any{"service_id": "svc-stateful", "parameters": map[string]any{"x": 1}})))
	assert.Equal(t, map[string]string{"token": secret, "phase": "updated"}, h.state("i-st"), "updates merge")
	r := keep(h.do("PUT", bindPath("i-st", "b1"), svc))
	requireStatus(t, http.StatusCreated, r)
	assert.Equal(t, map[string]any{"user": "b1", "password": "pw-b1"}, r.body["credentials"])
	requireStatus(t, http.StatusOK, keep(h.do("GET", bindPath("i-st", "b1"), nil)))
	requireStatus(t, http.StatusOK, keep(h.do("GET", instPath("i-st"), nil)))
	requireStatus(t, http.StatusOK, keep(h.do("GET", instPath("i-st")+"/last_operation", nil)))
	requireStatus(t, http.StatusOK, keep(h.do("GET", bindPath("i-st", "b1")+"/last_operation", nil)))
	requireStatus(t, http.StatusOK, keep(h.do("DELETE", bindPath("i-st", "b1")+q, nil)))
	requireStatus(t, http.StatusOK, keep(h.do("DELETE", instPath("i-st")+q, nil)))

	assert.Equal(t, []string{
		"provision token=[] phase=[]",
		"update token=[" + secret + "] phase=[provisioned]",
		"bind token=[" + secret + "] phase=[updated]",
		"unbind token=[" + secret + "] phase=[updated]",
		"deprovision token=[" + secret + "] phase=[updated]",
	}, readSeen(t, seen), "provision has no state; every later action sees it as state_<key>")

	for _, a := range answers {
		assert.NotContains(t, a.raw, secret, "bundle state never shows in an answer")
		assert.NotContains(t, a.raw, "phase", "bundle state never shows in an answer")
	}
	assert.NotContains(t, h.logs.String(), secret, "bundle state never shows in the logs")
	assert.NotContains(t, h.logs.String(), "pw-b1", "credentials never show in the logs")

	assert.Empty(t, h.state("i-st"), "the state is deleted after a successful deprovision")
	require.NoError(t, h.store.View(context.Background(), func(tx store.Tx) error {
		_, err := tx.Get(store.StateKey("i-st"))
		assert.ErrorIs(t, err, store.ErrNotFound, "no %s key left", store.StateKey("i-st"))
		return nil
	}))

	// The same instance id again starts from nothing.
	requireStatus(t, http.StatusCreated, h.do("PUT", instPath("i-st"), svc))
	lines := readSeen(t, seen)
	assert.Equal(t, "provision token=[] phase=[]", lines[len(lines)-1])
}

func TestBundleStateSurvivesAFailedDeprovision(t *testing.T) {
	h, seen := newStatefulHarness(t)
	svc := map[string]any{"service_id": "svc-stateful", "plan_id": "plan-s", "organization_guid": "org", "space_guid": "space"}
	requireStatus(t, http.StatusCreated, h.do("PUT", instPath("i-keep"), svc))
	// Make the deprovision fail once, after it saved more state.
	actions := statefulActions(seen)
	actions["deprovision"] = "#!/bin/sh\necho 'cleanup=half' > \"$LOCKSTEP_STATE_FILE\"\necho 'the database refuses to drop' >&2\nexit 1\n"
	writeBundleDir(t, filepath.Join(h.regDir, "stateful"), statefulManifest, actions)
	h.broker.Sync(context.Background())

	r := h.do("DELETE", instPath("i-keep")+"?service_id=svc-stateful&plan_id=plan-s", nil)
	requireStatus(t, http.StatusInternalServerError, r)
	assert.Equal(t, "deprovision failed: the database refuses to drop", r.str("description"))
	assert.Equal(t, map[string]string{"token": "tok-i-keep-s3cr3t", "phase": "provisioned", "cleanup": "half"}, h.state("i-keep"),
		"state written by a failed action is kept for the next attempt")
}
