package executor_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded/bundle"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/executor"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/store"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(brokerDirEnv); dir != "" {
		os.Exit(actAsBroker(dir)) // a broker process for TestActionsEndWithAKilledBroker
	}
	goleak.VerifyTestMain(m)
}

// scriptBundle builds a bundle whose provision, bind and update actions are
// the given shell scripts.
func scriptBundle(t *testing.T, scripts map[bundle.Action]string) *bundle.Bundle {
	t.Helper()
	files := map[string]bundle.File{}
	for a, body := range scripts {
		files["actions/"+string(a)] = bundle.File{Executable: true, Data: []byte("#!/bin/sh\n" + body)}
	}
	m := bundle.Manifest{Name: "t", ID: "svc", Description: "test", Bindable: true,
		Plans: []bundle.Plan{{ID: "p", Name: "p", Description: "p"}}}
	b, err := bundle.Assemble(m, files)
	require.NoError(t, err)
	return b
}

func invocation(b *bundle.Bundle, a bundle.Action, params string, state map[string]string) executor.Invocation {
	return executor.Invocation{
		Bundle: b, Action: a, Program: b.Actions[a], State: state,
		Input: executor.Input{Action: a, Operation: "op-1", InstanceID: "inst-1", BindingID: "bind-1",
			JobRequest: store.JobRequest{ServiceID: "svc", PlanID: "p", Parameters: json.RawMessage(params)}},
	}
}

func TestProcessProtocol(t *testing.T) {
	t.Setenv("LOCKSTEP_BROKER_PASSWORD", "broker-secret")
	tests := []struct {
		name       string
		action     bundle.Action
		script     string
		params     string
		state      map[string]string
		wantOutput executor.Output
		wantState  map[string]string
		wantErr    string
	}{
		{
			name: "credentials, state and environment", action: bundle.Bind,
			script: `read -r doc
[ "$doc" = "$(cat "$LOCKSTEP_INPUT_FILE")" ] || { echo "stdin differs from the input file" >&2; exit 1; }
case "$doc" in *'"binding_id":"bind-1"'*) ;; *) echo "no binding id in $doc" >&2; exit 1;; esac
[ -z "$LOCKSTEP_BROKER_PASSWORD" ] || { echo "the broker environment leaked" >&2; exit 1; }
printf 'user=%s\ncount=\n' "$param_user" > "$LOCKSTEP_STATE_FILE"
printf '{"credentials":{"user":"%s","size":%s,"seen":"%s","dir":"%s"}}' "$param_user" "$param_size" "$state_token" "$(basename "$PWD")" > "$LOCKSTEP_OUTPUT_FILE"`,
			params:     `{"user":"alice","size":3,"nested":{"x":1}}`,
			state:      map[string]string{"token": "t0k3n", "count": "1"},
			wantOutput: executor.Output{Credentials: json.RawMessage(`{"user":"alice","size":3,"seen":"t0k3n","dir":"DIGEST"}`)},
			wantState:  map[string]string{"user": "alice", "count": ""},
		},
		{
			name: "provision gets no state", action: bundle.Provision,
			script: `[ -z "$state_token" ] || exit 1
echo '{"dashboard_url":"https://dash/x"}' > "$LOCKSTEP_OUTPUT_FILE"`,
			state:      map[string]string{"token": "t0k3n"},
			wantOutput: executor.Output{DashboardURL: "https://dash/x"},
		},
		{
			name: "failure takes the last stderr line", action: bundle.Update,
			script:  "echo working >&2\necho 'disk quota exceeded' >&2\nexit 3",
			wantErr: "update failed: disk quota exceeded",
		},
		{
			name: "failure prefers the output description; state is kept", action: bundle.Update,
			script:     "echo 'half=done' > \"$LOCKSTEP_STATE_FILE\"\necho '{\"description\":\"refused: fail=update\"}' > \"$LOCKSTEP_OUTPUT_FILE\"\necho noise >&2\nexit 1",
			wantOutput: executor.Output{Description: "refused: fail=update"},
			wantState:  map[string]string{"half": "done"},
			wantErr:    "update failed: refused: fail=update",
		},
		{
			name: "silent failure names the exit status", action: bundle.Update,
			script: "exit 7", wantErr: "exited with status 7",
		},
		{
			name: "malformed output", action: bundle.Bind,
			script: "echo 'not json' > \"$LOCKSTEP_OUTPUT_FILE\"", wantErr: "broke the output protocol",
		},
		{
			name: "credentials must be an object", action: bundle.Bind,
			script: `echo '{"credentials":"x"}' > "$LOCKSTEP_OUTPUT_FILE"`, wantErr: "credentials in the output file must be a JSON object",
		},
		{
			name: "a state file too large", action: bundle.Update,
			script: `head -c 70000 /dev/zero | tr '\0' a > "$LOCKSTEP_STATE_FILE"`, wantErr: "state is 70000 bytes; at most 65536 are allowed",
		},
		{
			name: "malformed state", action: bundle.Update,
			script: "echo '9lives=x' > \"$LOCKSTEP_STATE_FILE\"", wantErr: `key "9lives"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := scriptBundle(t, map[bundle.Action]string{tt.action: tt.script})
			p := &executor.Process{WorkDir: t.TempDir()}
			res, err := p.Run(context.Background(), invocation(b, tt.action, tt.params, tt.state))
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				var ae *executor.ActionError
				require.ErrorAs(t, err, &ae)
				assert.False(t, ae.Stopped())
			} else {
				require.NoError(t, err)
			}
			want := tt.wantOutput
			want.Credentials = json.RawMessage(strings.Replace(string(want.Credentials), "DIGEST", b.Digest, 1))
			if len(want.Credentials) == 0 {
				want.Credentials = nil
			}
			assert.Equal(t, want, res.Output)
			if tt.wantState != nil {
				assert.Equal(t, tt.wantState, res.StateUpdates)
			}
			entries, err := os.ReadDir(filepath.Join(p.WorkDir, "runs"))
			require.NoError(t, err)
			assert.Empty(t, entries, "the run directory (input, state) is removed")
		})
	}
}

// gone reports whether pid has exited (a zombie waiting for its reaper
// counts as exited).
func gone(pid int) bool {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	fields := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
	return len(fields) > 0 && fields[0] == "Z"
}

func waitGone(t *testing.T, pidFile string) {
	t.Helper()
	var raw []byte
	require.Eventually(t, func() bool {
		var err error
		raw, err = os.ReadFile(pidFile)
		return err == nil && len(strings.TrimSpace(string(raw))) > 0
	}, 5*time.Second, 10*time.Millisecond, "the action never wrote its child's pid")
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return gone(pid) }, 5*time.Second, 10*time.Millisecond,
		"the child %d the action left running was not killed", pid)
}

// TestProcessTimeoutKillsTheGroup: when the context ends while the action
// runs (its timeout), the action and what it started are killed.
func TestProcessTimeoutKillsTheGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	b := scriptBundle(t, map[bundle.Action]string{bundle.Provision: "sleep 60 &\necho $! > " + pidFile + ".tmp\nmv " + pidFile + ".tmp " + pidFile + "\nsleep 60\n"})
	p := &executor.Process{WorkDir: t.TempDir()}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		// The action's time is up once it started its child.
		defer cancel()
		for range 3000 {
			if _, err := os.Stat(pidFile); err == nil {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	_, err := p.Run(ctx, invocation(b, bundle.Provision, `{}`, nil))
	var ae *executor.ActionError
	require.ErrorAs(t, err, &ae)
	assert.True(t, ae.Stopped())
	assert.ErrorIs(t, err, context.Canceled)
	waitGone(t, pidFile)
}

func TestProcessLeftoversAreKilled(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	b := scriptBundle(t, map[bundle.Action]string{bundle.Provision: "sleep 60 &\necho $! > " + pidFile + "\nexit 0\n"})
	p := &executor.Process{WorkDir: t.TempDir()}
	_, err := p.Run(context.Background(), invocation(b, bundle.Provision, `{}`, nil))
	require.NoError(t, err)
	waitGone(t, pidFile)
}

func TestProcessConcurrentRunsShareTheBundle(t *testing.T) {
	b := scriptBundle(t, map[bundle.Action]string{bundle.Bind: `echo "{\"credentials\":{\"n\":\"$param_n\"}}" > "$LOCKSTEP_OUTPUT_FILE"`})
	p := &executor.Process{WorkDir: t.TempDir()}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := p.Run(context.Background(), invocation(b, bundle.Bind, `{"n":"`+strconv.Itoa(i)+`"}`, nil))
			assert.NoError(t, err)
			assert.JSONEq(t, `{"n":"`+strconv.Itoa(i)+`"}`, string(res.Output.Credentials))
		}()
	}
	wg.Wait()
	entries, err := os.ReadDir(filepath.Join(p.WorkDir, "bundles"))
	require.NoError(t, err)
	require.Len(t, entries, 1, "one unpacked copy per digest")
	assert.Equal(t, b.Digest, entries[0].Name())
}

func TestBuiltinAndMux(t *testing.T) {
	b := scriptBundle(t, map[bundle.Action]string{bundle.Provision: "exit 9"})
	mux := executor.Mux{Process: &executor.Process{WorkDir: t.TempDir()}}
	tests := []struct {
		name      string
		program   string
		action    bundle.Action
		wantCreds string
		wantErr   string
	}{
		{"noop", bundle.Noop, bundle.Bind, "", ""},
		{"echo bind", bundle.Echo, bundle.Bind, `{"instance_id":"inst-1","binding_id":"bind-1","parameters":{"a":1}}`, ""},
		{"echo provision", bundle.Echo, bundle.Provision, "", ""},
		{"unknown built-in", "builtin:nope", bundle.Bind, "", "unknown built-in"},
		{"process", "actions/provision", bundle.Provision, "", "exited with status 9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inv := invocation(b, tt.action, `{"a":1}`, nil)
			inv.Program = tt.program
			res, err := mux.Run(context.Background(), inv)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			if tt.wantCreds == "" {
				assert.Empty(t, res.Output.Credentials)
			} else {
				assert.JSONEq(t, tt.wantCreds, string(res.Output.Credentials))
			}
		})
	}
}

func TestParseState(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    map[string]string
		wantErr string
	}{
		{"pairs, comments, blanks, later wins", "a=1\n\n# note\nb=x=y\na=2\nc=\n", map[string]string{"a": "2", "b": "x=y", "c": ""}, ""},
		{"no equals", "a\n", nil, "line 1: want key=value"},
		{"bad key", "a-b=1\n", nil, `key "a-b"`},
		{"too big", strings.Repeat("a", 70<<10), nil, "at most"},
		{"a NUL in a value", "a=x\x00y\n", nil, `the value of "a" holds a NUL byte`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := executor.ParseState([]byte(tt.in))
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestMergeState(t *testing.T) {
	state := map[string]string{"a": "1", "b": "2"}
	got := executor.MergeState(state, map[string]string{"b": "", "c": "3"})
	assert.Equal(t, map[string]string{"a": "1", "c": "3"}, got)
	assert.Equal(t, map[string]string{"a": "1", "b": "2"}, state, "the input is not modified")
}
