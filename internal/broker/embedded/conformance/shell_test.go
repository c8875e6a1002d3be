package conformance

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded"
)

// The shell bundle runs real processes through the broker's own executor,
// one script for every action. Parameters steer it:
//
//   - refuse=<action>: that action refuses (exit status 65);
//   - badstate=<action>: that action writes a state value holding a NUL;
//   - linger=<file>: the action starts a child that sleeps, writes the
//     child's pid to the file and waits for it.
//
// Every action checks that stdin and the input file hold the same
// document; provision saves a state value too long for the environment,
// and deprovision checks that it finds it in the input document and not in
// its environment (unless provision broke the state protocol and saved
// nothing). Nothing a test sends reaches an action by its arguments.
const shellManifest = `{
  "name": "shell", "id": "svc-shell", "description": "real shell actions", "bindable": true,
  "plans": [{"id": "plan-sh", "name": "default", "description": "default", "updateable": true}]
}`

const shellQuery = "service_id=svc-shell&plan_id=plan-sh"

const shellAction = `#!/bin/sh
set -eu
in_file=$(wc -c < "$LOCKSTEP_INPUT_FILE")
in_stdin=$(wc -c)
if [ "$in_file" -ne "$in_stdin" ]; then
  echo "stdin ($in_stdin bytes) differs from the input file ($in_file bytes)" >&2
  exit 1
fi
if [ "${param_refuse:-}" = "$LOCKSTEP_ACTION" ]; then
  echo '{"description":"the parameter refuse names this action"}' > "$LOCKSTEP_OUTPUT_FILE"
  exit 65
fi
if [ -n "${param_linger:-}" ]; then
  sleep 60 &
  echo $! > "$param_linger"
  wait
fi
if [ "${param_badstate:-}" = "$LOCKSTEP_ACTION" ]; then
  printf 'broken=a\000b\n' > "$LOCKSTEP_STATE_FILE"
elif [ "$LOCKSTEP_ACTION" = provision ]; then
  printf 'long=%s\n' "$(head -c 10000 /dev/zero | tr '\000' y)" > "$LOCKSTEP_STATE_FILE"
fi
if [ "$LOCKSTEP_ACTION" = deprovision ] && [ "${param_badstate:-}" != provision ]; then
  if ! grep -q '"long":"yyyyyyyyyy' "$LOCKSTEP_INPUT_FILE"; then
    echo "the long state value is not in the input document" >&2
    exit 1
  fi
  if [ -n "${state_long:-}" ]; then
    echo "the long state value reached the environment" >&2
    exit 1
  fi
fi
printf '{"description":"%s read %s bytes","dashboard_url":"https://shell.example/%s","credentials":{"bytes":%s}}\n' \
  "$LOCKSTEP_ACTION" "$in_file" "$LOCKSTEP_INSTANCE_ID" "$in_file" > "$LOCKSTEP_OUTPUT_FILE"
`

// newShellHarness is a broker whose only bundle is the shell bundle, run by
// the broker's own executor.
func newShellHarness(t *testing.T, opts ...harnessOption) *harness {
	t.Helper()
	opts = append([]harnessOption{withBundles(map[string]string{}), noInitialSync,
		withConfig(func(c *embedded.Config) { c.Executor = nil })}, opts...)
	h := newHarness(t, opts...)
	actions := map[string]string{}
	for _, a := range []string{"provision", "update", "deprovision", "bind", "unbind"} {
		actions[a] = shellAction
	}
	writeBundleDir(t, filepath.Join(h.regDir, "shell"), shellManifest, actions)
	h.broker.Sync(context.Background())
	return h
}

func shell(params map[string]any) map[string]any {
	return map[string]any{"service_id": "svc-shell", "plan_id": "plan-sh", "parameters": params,
		"organization_guid": "org", "space_guid": "space"}
}

func shellBind(params map[string]any) map[string]any {
	return map[string]any{"service_id": "svc-shell", "plan_id": "plan-sh", "parameters": params}
}
