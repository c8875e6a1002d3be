package reexec

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"syscall"
)

// KillRunnerProcesses kills, with their process groups, the processes of
// this host that a broker process (runnerID) started as actions and left
// behind: when a broker dies, the kernel kills each action's first process
// (parent-death signal), but not what that process started. They are found
// by the LOCKSTEP_RUNNER variable of their environment, which only actions
// of that runner carry. It returns how many processes it signalled.
func KillRunnerProcesses(runnerID string) (int, error) {
	if runnerID == "" {
		return 0, nil
	}
	marker := []byte(RunnerEnv + "=" + runnerID)
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, wrap("list processes", err)
	}
	self := os.Getpid()
	killed := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		environ, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !hasVar(environ, marker) {
			continue // gone, or not ours to read
		}
		if pgid, err := syscall.Getpgid(pid); err == nil && pgid > 1 && pgid != syscall.Getpgrp() {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err == nil || errors.Is(err, syscall.ESRCH) {
			killed++
		}
	}
	return killed, nil
}

// hasVar reports whether a NUL-separated environment holds the entry kv.
func hasVar(environ, kv []byte) bool {
	for _, entry := range bytes.Split(environ, []byte{0}) {
		if bytes.Equal(entry, kv) {
			return true
		}
	}
	return false
}
