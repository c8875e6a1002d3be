package executor_test

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded/bundle"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/executor"
)

// actionUsers returns users no other process of this machine has: a range
// of its own for each test, so that tests (and test binaries of other
// packages) never sweep each other's processes. Running actions as other
// users needs root (CAP_SETUID, CAP_SETGID): make test and CI run as root,
// and without it these tests fail rather than skip.
func actionUsers(t testing.TB, count int) executor.Users {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatalf("this test runs actions as users of their own, which needs root (CAP_SETUID, CAP_SETGID); make test runs as root")
	}
	return executor.Users{First: 200000 + rand.IntN(1<<20)*64, Count: count}
}

// reachableDir is a temporary directory the action users can pass through
// (its parent, from the testing package, is closed to others).
func reachableDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.Chmod(filepath.Dir(dir), 0o711))
	require.NoError(t, os.Chmod(dir, 0o711))
	return dir
}

// sandboxed is an executor whose actions run as users of their own.
func sandboxed(t *testing.T, count int, max executor.Limits) *executor.Process {
	t.Helper()
	p := &executor.Process{WorkDir: filepath.Join(reachableDir(t), "work"), Users: actionUsers(t, count), Max: max}
	require.NoError(t, p.Prepare())
	return p
}

// TestActionsRunAsUsersOfTheirOwn: an action runs as a user and group of
// its own, with no other group, without the broker's environment, and
// cannot read the broker's files or its environment through /proc.
func TestActionsRunAsUsersOfTheirOwn(t *testing.T) {
	t.Setenv("LOCKSTEP_BROKER_PASSWORD", "broker-secret")
	secrets := reachableDir(t)
	store := filepath.Join(secrets, "broker.db")
	require.NoError(t, os.WriteFile(store, []byte("every tenant's parameters"), 0o600))
	require.NoError(t, os.Chmod(secrets, 0o755), "the store's directory is open; the file is not")

	p := sandboxed(t, 2, executor.Limits{})
	b := scriptBundle(t, map[bundle.Action]string{bundle.Bind: `
leaks=""
env | grep -q broker-secret && leaks="$leaks environment"
cat /proc/$PPID/environ 2>/dev/null | grep -q broker-secret && leaks="$leaks parent-environ"
cat /proc/1/environ >/dev/null 2>&1 && leaks="$leaks init-environ"
cat "` + store + `" >/dev/null 2>&1 && leaks="$leaks store"
ls "` + filepath.Join(p.WorkDir, "runs") + `" >/dev/null 2>&1 && leaks="$leaks runs"
ls "` + filepath.Join(p.WorkDir, "private") + `" >/dev/null 2>&1 && leaks="$leaks private"
echo x > "$HOME/scratch" || leaks="$leaks no-home"
printf '{"credentials":{"uid":"%s","groups":"%s","leaks":"%s","umask":"%s"}}' "$(id -u)" "$(id -G)" "$leaks" "$(umask)" > "$LOCKSTEP_OUTPUT_FILE"`})
	res, err := p.Run(context.Background(), invocation(b, bundle.Bind, `{}`, nil))
	require.NoError(t, err)
	var got map[string]string
	require.NoError(t, json.Unmarshal(res.Output.Credentials, &got))
	uid, err := strconv.Atoi(got["uid"])
	require.NoError(t, err)
	assert.True(t, uid >= p.Users.First && uid < p.Users.First+p.Users.Count, "uid %d is one of %s", uid, p.Users)
	assert.Equal(t, got["uid"], got["groups"], "its own group and no other")
	assert.Empty(t, got["leaks"], "what the action could reach")
	assert.Equal(t, "0027", got["umask"])
	entries, err := os.ReadDir(filepath.Join(p.WorkDir, "runs"))
	require.NoError(t, err)
	assert.Empty(t, entries, "the run directory, with what the action wrote in it, is removed")
}

// TestActionsCannotReachEachOther: while one action runs, another, which
// knows where the first one's input, output and process are, can read,
// change or signal none of them.
func TestActionsCannotReachEachOther(t *testing.T) {
	t.Parallel()
	p := sandboxed(t, 2, executor.Limits{})
	shared := reachableDir(t)
	require.NoError(t, os.Chmod(shared, 0o1777))
	victim := scriptBundle(t, map[bundle.Action]string{bundle.Provision: `
echo "$LOCKSTEP_INPUT_FILE $LOCKSTEP_OUTPUT_FILE $$" > "` + shared + `/victim.tmp"
chmod 644 "` + shared + `/victim.tmp"
mv "` + shared + `/victim.tmp" "` + shared + `/victim"
while [ ! -e "` + shared + `/done" ]; do sleep 0.05; done
echo '{"dashboard_url":"https://victim"}' > "$LOCKSTEP_OUTPUT_FILE"`})
	attacker := scriptBundle(t, map[bundle.Action]string{bundle.Bind: `
read -r input output pid < "` + shared + `/victim"
got=""
cat "$input" >/dev/null 2>&1 && got="$got input"
echo '{"dashboard_url":"https://attacker"}' > "$output" 2>/dev/null && got="$got output"
ls "$(dirname "$input")" >/dev/null 2>&1 && got="$got run-directory"
kill -0 "$pid" 2>/dev/null && got="$got signal"
touch "` + shared + `/done"
printf '{"credentials":{"reached":"%s"}}' "$got" > "$LOCKSTEP_OUTPUT_FILE"`})

	var wg sync.WaitGroup
	var victimRes executor.Result
	var victimErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		victimRes, victimErr = p.Run(ctx, invocation(victim, bundle.Provision, `{"password":"s3cret"}`, nil))
	}()
	require.Eventually(t, func() bool { _, err := os.Stat(filepath.Join(shared, "victim")); return err == nil },
		30*time.Second, 10*time.Millisecond, "the first action started")
	res, err := p.Run(context.Background(), invocation(attacker, bundle.Bind, `{}`, nil))
	require.NoError(t, err)
	wg.Wait()
	require.NoError(t, victimErr)
	assert.JSONEq(t, `{"reached":""}`, string(res.Output.Credentials), "what one action reached of another")
	assert.Equal(t, "https://victim", victimRes.Output.DashboardURL)
}

// TestActionsStopAtTheirLimits: an action that needs more memory, more
// processes or more CPU time than it may have fails, and its failure says
// which limits it ran with; one that runs too long is stopped.
func TestActionsStopAtTheirLimits(t *testing.T) {
	t.Parallel()
	max := executor.Limits{Memory: 64 << 20, CPU: 10 * time.Second, Processes: 8}
	p := sandboxed(t, 4, max)
	tests := []struct {
		name    string
		limits  string // the bundle's
		script  string
		timeout time.Duration
		want    []string
	}{
		{"memory", "", `dd if=/dev/zero of=/dev/null bs=300M count=1`, 0,
			[]string{"provision failed: dd: memory exhausted by input buffer of size 314572800 bytes (300 MiB)", "64Mi of memory"}},
		{"processes", `{"processes": 4}`, "for i in 1 2 3 4 5 6 7 8; do sleep 30 & done\nwait", 0,
			[]string{"provision failed:", "fork", "4 processes"}},
		{"CPU time", `{"cpu": "1s"}`, `while :; do :; done`, 0,
			[]string{"provision failed: stopped at its CPU time limit (1s per process)"}},
		{"wall time", "", `sleep 30`, time.Second, []string{"provision failed: context deadline exceeded"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := scriptBundle(t, map[bundle.Action]string{bundle.Provision: tt.script})
			if tt.limits != "" {
				var l bundle.Limits
				require.NoError(t, json.Unmarshal([]byte(tt.limits), &l))
				b.Manifest.Limits = &l
			}
			ctx := context.Background()
			if tt.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.timeout)
				defer cancel()
			}
			_, err := p.Run(ctx, invocation(b, bundle.Provision, `{}`, nil))
			require.Error(t, err, "the CPU and wall time probes never end by themselves")
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
			var ae *executor.ActionError
			require.ErrorAs(t, err, &ae)
			assert.Equal(t, tt.timeout > 0, ae.Stopped(), "stopped at its timeout")
			t.Log(err)
		})
	}
}

// TestLeftoversOfAnActionUserAreEnded: what an action leaves running is
// ended with it, even a process that left its process group (setsid).
func TestLeftoversOfAnActionUserAreEnded(t *testing.T) {
	t.Parallel()
	p := sandboxed(t, 1, executor.Limits{})
	pidFile := filepath.Join(reachableDir(t), "child.pid")
	require.NoError(t, os.Chmod(filepath.Dir(pidFile), 0o777))
	b := scriptBundle(t, map[bundle.Action]string{bundle.Provision: "setsid sleep 60 &\necho $! > " + pidFile + "\nexit 0\n"})
	_, err := p.Run(context.Background(), invocation(b, bundle.Provision, `{}`, nil))
	require.NoError(t, err)
	waitGone(t, pidFile)
}

// TestTheBrokerReadsNothingAnActionPointsItAt: an action that replaces its
// output or state file by a link to a file the broker may read (but it may
// not) gets a protocol error, not that file's content.
func TestTheBrokerReadsNothingAnActionPointsItAt(t *testing.T) {
	t.Parallel()
	p := sandboxed(t, 1, executor.Limits{})
	secret := filepath.Join(reachableDir(t), "secret.json")
	require.NoError(t, os.WriteFile(secret, []byte(`{"credentials":{"secret":"s3cret"}}`), 0o600))
	tests := []struct {
		name, script, want string
	}{
		{"a symbolic link", `rm "$LOCKSTEP_OUTPUT_FILE"; ln -s "` + secret + `" "$LOCKSTEP_OUTPUT_FILE"`, "is a symbolic link"},
		{"a hard link", `echo '{}' > "$HOME/mine"; rm "$LOCKSTEP_STATE_FILE"; ln "$HOME/mine" "$LOCKSTEP_STATE_FILE"`, "has other names"},
		{"a FIFO", `rm "$LOCKSTEP_OUTPUT_FILE"; mkfifo "$LOCKSTEP_OUTPUT_FILE"`, "is not a regular file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := scriptBundle(t, map[bundle.Action]string{bundle.Bind: tt.script})
			res, err := p.Run(context.Background(), invocation(b, bundle.Bind, `{}`, nil))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.NotContains(t, err.Error(), "s3cret")
			assert.Empty(t, res.Output.Credentials)
		})
	}
}

// TestPrepareSaysWhatCannotWork: a work directory the action users cannot
// reach is refused before any action, naming the directory to open.
func TestPrepareSaysWhatCannotWork(t *testing.T) {
	t.Parallel()
	closed := t.TempDir() // 0700, under a 0700 directory
	p := &executor.Process{WorkDir: filepath.Join(closed, "work"), Users: actionUsers(t, 1)}
	err := p.Prepare()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the action users cannot reach the work directory")
	assert.Contains(t, err.Error(), "chmod o+x")
	_, runErr := p.Run(context.Background(), invocation(scriptBundle(t, map[bundle.Action]string{bundle.Bind: "exit 0"}), bundle.Bind, `{}`, nil))
	require.Error(t, runErr)
	assert.True(t, strings.Contains(runErr.Error(), "cannot reach"), runErr.Error())
}
