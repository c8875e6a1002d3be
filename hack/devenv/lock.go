package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// instanceLock is held while a devenv runs on a state directory. It is an
// advisory file lock: the kernel releases it when the process ends, however
// it ends, so a crashed run never blocks the next one.
type instanceLock struct {
	file *os.File
}

// alreadyRunningError says that another devenv runs on the state directory.
type alreadyRunningError struct {
	pid        int
	started    string
	kubeconfig string
}

func (e *alreadyRunningError) Error() string {
	who, stop := "another make run", "Ctrl-C in its terminal"
	if e.pid > 0 {
		who = fmt.Sprintf("another make run (pid %d, started %s)", e.pid, e.started)
		stop += fmt.Sprintf(", or kill -INT %d", e.pid)
	}
	return fmt.Sprintf("make run: lockstep is already running here: %s holds the state directory.\n"+
		"Use it from another terminal:\n  export KUBECONFIG=%s\nor stop it first (%s).", who, e.kubeconfig, stop)
}

// lock takes the state directory for this process, or returns an
// *alreadyRunningError naming the process that has it.
func (s *state) lock() (*instanceLock, error) {
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating the state directory %s: %w", s.dir, err)
	}
	f, err := os.OpenFile(s.lockFile(), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", s.lockFile(), err)
	}
	if err := tryLock(f); err != nil {
		defer func() { _ = f.Close() }()
		if errors.Is(err, errLocked) {
			pid, started := holder(s.lockFile())
			return nil, &alreadyRunningError{pid: pid, started: started, kubeconfig: s.kubeconfig()}
		}
		return nil, fmt.Errorf("locking %s: %w", s.lockFile(), err)
	}
	// Say who holds it, for the message a second run prints.
	info := fmt.Sprintf("%d\n%s\n", os.Getpid(), time.Now().Format(time.RFC3339))
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(info), 0)
	}
	return &instanceLock{file: f}, nil
}

// release lets the next devenv take the state directory.
func (l *instanceLock) release() {
	_ = l.file.Truncate(0)
	_ = unlock(l.file)
	_ = l.file.Close()
}

// holder reads the pid and start time the holder wrote into the lock file.
func holder(path string) (int, string) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0, ""
	}
	lines := strings.SplitN(string(raw), "\n", 3)
	if len(lines) < 2 {
		return 0, ""
	}
	pid, err := strconv.Atoi(strings.TrimSpace(lines[0]))
	if err != nil {
		return 0, ""
	}
	return pid, strings.TrimSpace(lines[1])
}
