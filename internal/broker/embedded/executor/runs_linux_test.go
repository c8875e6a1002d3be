package executor_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded/bundle"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/executor"
)

// TestStaleRunsAreRemovedAtStart: the run directories a stopped broker
// left (its input documents hold parameters) are removed when a broker
// starts on the same work directory; those of a running broker's actions
// are not. Meanwhile no other user can read them.
func TestStaleRunsAreRemovedAtStart(t *testing.T) {
	work := t.TempDir()
	release := filepath.Join(t.TempDir(), "release")
	running := &executor.Process{WorkDir: work}
	b := scriptBundle(t, map[bundle.Action]string{bundle.Provision: `while [ ! -e "` + release + `" ]; do sleep 0.05; done`})
	done := make(chan error, 1)
	go func() {
		_, err := running.Run(context.Background(), invocation(b, bundle.Provision, `{"password":"s3cret"}`, nil))
		done <- err
	}()
	runs := filepath.Join(work, "runs")
	var live string
	require.Eventually(t, func() bool {
		entries, _ := os.ReadDir(runs)
		if len(entries) != 1 {
			return false
		}
		live = filepath.Join(runs, entries[0].Name())
		_, err := os.Stat(filepath.Join(live, "input.json"))
		return err == nil
	}, 30*time.Second, 10*time.Millisecond, "the action's run directory")
	for _, path := range []string{runs, live, filepath.Join(live, "input.json")} {
		info, err := os.Stat(path)
		require.NoError(t, err)
		assert.Zero(t, info.Mode().Perm()&0o044, "%s (%s) is readable by no other user", path, info.Mode())
	}

	// What a broker killed during an action leaves.
	stale := filepath.Join(runs, "provision-1234")
	require.NoError(t, os.MkdirAll(filepath.Join(stale, "tmp"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(stale, "input.json"), []byte(`{"parameters":{"password":"s3cret"}}`), 0o600))

	starting := &executor.Process{WorkDir: work}
	require.NoError(t, starting.Prepare())
	assert.NoDirExists(t, stale, "the stopped broker's run is removed")
	assert.DirExists(t, live, "the running broker's run stays")

	require.NoError(t, os.WriteFile(release, nil, 0o600))
	require.NoError(t, <-done)
	entries, err := os.ReadDir(runs)
	require.NoError(t, err)
	assert.Empty(t, entries)
}

// TestWorkDirOfAnotherUserIsRefused: a work directory another user created
// first (a shared /tmp) would let that user read the runs' parameters.
func TestWorkDirOfAnotherUserIsRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a directory to another user")
	}
	work := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(work, "runs"), 0o777))
	require.NoError(t, os.Chown(filepath.Join(work, "runs"), 4242, 4242))
	err := (&executor.Process{WorkDir: work}).Prepare()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "is not a directory of the broker's own user (0) but of user 4242")
	var st syscall.Stat_t
	require.NoError(t, syscall.Stat(filepath.Join(work, "runs"), &st))
	assert.Equal(t, uint32(4242), st.Uid, "nothing changed")
}
