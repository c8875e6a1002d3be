package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Log files in the state directory's logs/. Every run appends to them,
// after a line that marks its start, so the logs of earlier runs are kept.
// A file that has grown past maxLogSize is moved to NAME.1 (replacing the
// NAME.1 before it) when a run starts: each log takes at most about twice
// that size, plus what one run writes.
const (
	logLockstep          = "lockstep.log"
	logAPIServer         = "kube-apiserver.log"
	logEtcd              = "etcd.log"
	logControllerManager = "kube-controller-manager.log"

	maxLogSize = 20 << 20 // 20 MiB
)

// logFiles are the open log files of one run.
type logFiles struct {
	lockstep, apiserver, etcd, controllerManager *os.File
}

// openLogs opens the log files for appending, after moving any larger
// than maxSize to NAME.1, and marks the start of this run in each.
func (s *state) openLogs(maxSize int64, now time.Time) (*logFiles, error) {
	if err := os.MkdirAll(s.logDir(), 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", s.logDir(), err)
	}
	l := &logFiles{}
	for _, f := range []struct {
		name string
		file **os.File
	}{{logLockstep, &l.lockstep}, {logAPIServer, &l.apiserver}, {logEtcd, &l.etcd}, {logControllerManager, &l.controllerManager}} {
		file, err := openLog(filepath.Join(s.logDir(), f.name), maxSize, now)
		if err != nil {
			l.close()
			return nil, err
		}
		*f.file = file
	}
	return l, nil
}

// openLog opens one log file for appending (rotating it first when it is
// larger than maxSize) and writes the start marker.
func openLog(path string, maxSize int64, now time.Time) (*os.File, error) {
	info, err := os.Stat(path)
	switch {
	case err == nil && info.Size() > maxSize:
		if err := os.Rename(path, path+".1"); err != nil {
			return nil, fmt.Errorf("moving the full log %s aside: %w", path, err)
		}
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("reading the log file %s: %w", path, err)
	}
	file, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening the log file: %w", err)
	}
	if _, err := fmt.Fprintf(file, "==== make run started at %s (pid %d) ====\n", now.UTC().Format(time.RFC3339), os.Getpid()); err != nil {
		_ = file.Close()
		return nil, fmt.Errorf("writing to the log file %s: %w", path, err)
	}
	return file, nil
}

func (l *logFiles) close() {
	for _, f := range []*os.File{l.lockstep, l.apiserver, l.etcd, l.controllerManager} {
		if f != nil {
			_ = f.Close()
		}
	}
}
