package main

import (
	"fmt"
	"os"
	"path/filepath"
)

// Log files in the state directory's logs/, new at every start.
const (
	logLockstep  = "lockstep.log"
	logAPIServer = "kube-apiserver.log"
	logEtcd      = "etcd.log"
)

// logFiles are the open log files of one run.
type logFiles struct {
	lockstep, apiserver, etcd *os.File
}

func (s *state) openLogs() (*logFiles, error) {
	if err := os.MkdirAll(s.logDir(), 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", s.logDir(), err)
	}
	l := &logFiles{}
	for _, f := range []struct {
		name string
		file **os.File
	}{{logLockstep, &l.lockstep}, {logAPIServer, &l.apiserver}, {logEtcd, &l.etcd}} {
		file, err := os.OpenFile(filepath.Join(s.logDir(), f.name), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			l.close()
			return nil, fmt.Errorf("opening the log file: %w", err)
		}
		*f.file = file
	}
	return l, nil
}

func (l *logFiles) close() {
	for _, f := range []*os.File{l.lockstep, l.apiserver, l.etcd} {
		if f != nil {
			_ = f.Close()
		}
	}
}
