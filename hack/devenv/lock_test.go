package main

import (
	"errors"
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestASecondRunOnTheSameStateSaysWhoRuns(t *testing.T) {
	s := newState(t.TempDir())
	first, err := s.lock()
	require.NoError(t, err)

	_, err = s.lock()
	var running *alreadyRunningError
	require.True(t, errors.As(err, &running), "a second lock must fail with alreadyRunningError, got %v", err)
	assert.Equal(t, os.Getpid(), running.pid)
	assert.Contains(t, err.Error(), "already running")
	assert.Contains(t, err.Error(), "pid "+strconv.Itoa(os.Getpid()))
	assert.Contains(t, err.Error(), "export KUBECONFIG="+s.kubeconfig())
	assert.Contains(t, err.Error(), "kill -INT "+strconv.Itoa(os.Getpid()))

	first.release()
	again, err := s.lock()
	require.NoError(t, err, "a released state directory can be taken again")
	again.release()
}

func TestAlreadyRunningWithoutAHolderRecord(t *testing.T) {
	err := &alreadyRunningError{kubeconfig: "/x/kubeconfig"}
	assert.Contains(t, err.Error(), "another make run holds")
	assert.NotContains(t, err.Error(), "kill -INT", "no pid to name")
}

func TestHolder(t *testing.T) {
	tests := []struct {
		name, content string
		pid           int
		started       string
	}{
		{"written by lock", "42\n2026-01-02T03:04:05Z\n", 42, "2026-01-02T03:04:05Z"},
		{"empty", "", 0, ""},
		{"garbage", "not a pid\nx\n", 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := t.TempDir() + "/run.lock"
			require.NoError(t, os.WriteFile(path, []byte(tt.content), 0o644))
			pid, started := holder(path)
			assert.Equal(t, tt.pid, pid)
			assert.Equal(t, tt.started, started)
		})
	}
}
