package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeRun opens the logs as one run does, writes line to every log and
// closes them.
func writeRun(t *testing.T, s *state, maxSize int64, at time.Time, line string) {
	t.Helper()
	l, err := s.openLogs(maxSize, at)
	require.NoError(t, err)
	for _, f := range []*os.File{l.lockstep, l.apiserver, l.etcd, l.controllerManager} {
		_, err := f.WriteString(line + "\n")
		require.NoError(t, err)
	}
	l.close()
}

func TestLogsOfEarlierRunsAreKept(t *testing.T) {
	s := newState(t.TempDir())
	first := time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC)
	writeRun(t, s, maxLogSize, first, "first run")
	writeRun(t, s, maxLogSize, first.Add(time.Hour), "second run")

	for _, name := range []string{logLockstep, logAPIServer, logEtcd, logControllerManager} {
		raw, err := os.ReadFile(filepath.Join(s.logDir(), name))
		require.NoError(t, err)
		lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
		require.Len(t, lines, 4, "%s: a start marker and a line for each run:\n%s", name, raw)
		assert.Contains(t, lines[0], "==== make run started at 2026-11-25T08:00:00Z")
		assert.Equal(t, "first run", lines[1])
		assert.Contains(t, lines[2], "==== make run started at 2026-11-25T09:00:00Z")
		assert.Equal(t, "second run", lines[3])
		_, err = os.Stat(filepath.Join(s.logDir(), name+".1"))
		assert.ErrorIs(t, err, os.ErrNotExist, "nothing is rotated below the size limit")
	}
}

func TestALogPastTheSizeLimitIsMovedAsideAtTheNextStart(t *testing.T) {
	s := newState(t.TempDir())
	now := time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC)
	const limit = 100
	writeRun(t, s, limit, now, "first run")
	writeRun(t, s, limit, now, strings.Repeat("x", limit)) // past the limit now
	writeRun(t, s, limit, now, "third run")

	path := filepath.Join(s.logDir(), logLockstep)
	current, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Contains(t, string(current), "third run")
	assert.NotContains(t, string(current), "first run")
	previous, err := os.ReadFile(path + ".1")
	require.NoError(t, err)
	assert.Contains(t, string(previous), "first run", "the full log is kept as .1")
	assert.Contains(t, string(previous), strings.Repeat("x", limit))

	writeRun(t, s, limit, now, strings.Repeat("y", limit))
	writeRun(t, s, limit, now, "fifth run")
	previous, err = os.ReadFile(path + ".1")
	require.NoError(t, err)
	assert.Contains(t, string(previous), "third run", "one earlier file is kept: the newest")
	assert.NotContains(t, string(previous), "first run")
}
