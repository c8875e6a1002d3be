package executor_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded/bundle"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/executor"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/store"
)

// brokerDirEnv makes the test binary act as a broker process (TestMain)
// that runs one action under its work directory; brokerUsersEnv gives it
// action users.
const (
	brokerDirEnv   = "EXECUTOR_TEST_BROKER_DIR"
	brokerUsersEnv = "EXECUTOR_TEST_BROKER_USERS"
)

// actAsBroker watches its actions as the embedded broker does, runs a
// provision that starts a process of its own and waits, and never returns
// on its own: the test kills it.
func actAsBroker(dir string) int {
	const runner = "killed-broker"
	users, err := executor.ParseUsers(os.Getenv(brokerUsersEnv))
	if err != nil {
		return 2
	}
	p := &executor.Process{WorkDir: filepath.Join(dir, "work"), RunnerID: runner, Users: users}
	if err := p.Prepare(); err != nil {
		return 2
	}
	if _, err := executor.Watch(runner, users); err != nil {
		return 2
	}
	pids := filepath.Join(dir, "pids")
	m := bundle.Manifest{Name: "t", ID: "svc", Description: "test", Plans: []bundle.Plan{{ID: "p", Name: "p", Description: "p"}}}
	// The child leaves the action's process group, and with users of their
	// own drops the variable that names the runner: only the action user's
	// sweep finds it.
	child := "setsid sleep 300"
	if users.Enabled() {
		child = "env -u " + executor.RunnerEnv + " " + child
	}
	b, err := bundle.Assemble(m, map[string]bundle.File{"actions/provision": {Executable: true,
		Data: []byte("#!/bin/sh\n" + child + " &\necho $! $$ > " + pids + ".tmp\nmv " + pids + ".tmp " + pids + "\nwait\n")}})
	if err != nil {
		return 2
	}
	_, _ = p.Run(context.Background(), executor.Invocation{Bundle: b, Action: bundle.Provision, Program: b.Actions[bundle.Provision],
		Input: executor.Input{Action: bundle.Provision, Operation: "op-1", InstanceID: "i-1", JobRequest: store.JobRequest{ServiceID: "svc", PlanID: "p"}}})
	return 0
}

// A broker process killed with SIGKILL cannot end its actions itself: the
// kernel ends an action's first process (parent-death signal), and the
// watch (executor.Watch) ends what that process started, at once, not
// when a broker starts again on the host.
func TestActionsEndWithAKilledBroker(t *testing.T) {
	t.Run("actions as the broker's user", func(t *testing.T) {
		dir := t.TempDir()
		require.NoError(t, os.Chmod(dir, 0o777))
		actionsEndWithAKilledBroker(t, dir, "")
	})
	t.Run("actions as users of their own", func(t *testing.T) {
		dir := reachableDir(t)
		require.NoError(t, os.Chmod(dir, 0o777))
		actionsEndWithAKilledBroker(t, dir, actionUsers(t, 1).String())
	})
}

func actionsEndWithAKilledBroker(t *testing.T, dir, users string) {
	broker := exec.Command(os.Args[0], "-test.run=^$")
	broker.Env = append(os.Environ(), brokerDirEnv+"="+dir, brokerUsersEnv+"="+users)
	require.NoError(t, broker.Start())
	t.Cleanup(func() { _ = broker.Process.Kill(); _ = broker.Wait() })

	var started []int
	require.Eventually(t, func() bool {
		raw, err := os.ReadFile(filepath.Join(dir, "pids"))
		if err != nil {
			return false
		}
		started = started[:0]
		for _, f := range strings.Fields(string(raw)) {
			pid, err := strconv.Atoi(f)
			require.NoError(t, err)
			started = append(started, pid)
		}
		return len(started) == 2
	}, 30*time.Second, 20*time.Millisecond, "the action started")
	for _, pid := range started {
		require.False(t, gone(pid), "process %d runs", pid)
	}

	require.NoError(t, broker.Process.Signal(syscall.SIGKILL))
	_ = broker.Wait()
	for _, pid := range started {
		assert.Eventually(t, func() bool { return gone(pid) }, 20*time.Second, 20*time.Millisecond,
			"process %d, started by the killed broker's action, still runs", pid)
	}
}
