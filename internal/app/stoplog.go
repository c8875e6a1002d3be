package app

import (
	"context"

	"github.com/go-logr/logr"
)

// errLeaderElectionLost is the text of the error controller-runtime's
// manager reports when it lets go of the lead; it does so on every normal
// stop too, since a replica that stops gives the lead up at once
// (LeaderElectionReleaseOnCancel).
const errLeaderElectionLost = "leader election lost"

// quietStop is the manager's logger: once ctx ended (a normal stop), the
// lead given up is one line of information, not an error with a stack
// trace. Lost while running, it stays an error.
func quietStop(ctx context.Context, base logr.Logger) logr.Logger {
	sink := base.GetSink()
	if sink == nil {
		return base
	}
	if cd, ok := sink.(logr.CallDepthLogSink); ok {
		sink = cd.WithCallDepth(1) // this sink's own frame
	}
	return logr.New(&stopSink{LogSink: sink, stopping: func() bool { return ctx.Err() != nil }})
}

type stopSink struct {
	logr.LogSink
	stopping func() bool
}

// Init does nothing: the sink underneath was initialized when base was
// made, and initializing it again would count logr's frame twice.
func (s *stopSink) Init(logr.RuntimeInfo) {}

// Info is written out, not promoted, so that this sink's frame is one
// frame whatever the compiler does with promoted methods.
func (s *stopSink) Info(level int, msg string, keysAndValues ...any) {
	s.LogSink.Info(level, msg, keysAndValues...)
}

func (s *stopSink) Error(err error, msg string, keysAndValues ...any) {
	if err != nil && err.Error() == errLeaderElectionLost && s.stopping() {
		s.LogSink.Info(0, "stopped: gave the lead up", keysAndValues...)
		return
	}
	s.LogSink.Error(err, msg, keysAndValues...)
}

func (s *stopSink) WithValues(keysAndValues ...any) logr.LogSink {
	return &stopSink{LogSink: s.LogSink.WithValues(keysAndValues...), stopping: s.stopping}
}

func (s *stopSink) WithName(name string) logr.LogSink {
	return &stopSink{LogSink: s.LogSink.WithName(name), stopping: s.stopping}
}
