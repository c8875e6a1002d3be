package app

import (
	"slices"

	"github.com/go-logr/logr"
)

// LazyValues returns base with its WithValues deferred until a line is
// written. controller-runtime names every reconcile and every admission
// request in a logger of its own (controller, namespace, name, reconcile
// id); zap encodes those fields at once, a few hundred microseconds of
// CPU per broker operation for loggers that, at the default level, never
// write a line. Deferred, the fields cost nothing until a line uses them,
// and a line reads exactly as before.
func LazyValues(base logr.Logger) logr.Logger {
	sink := base.GetSink()
	if sink == nil {
		return base
	}
	if cd, ok := sink.(logr.CallDepthLogSink); ok {
		sink = cd.WithCallDepth(1) // this sink's own frame
	}
	return logr.New(&lazySink{applied: sink})
}

// lazySink holds the values given since the last name (or the start) and
// hands them to applied only when it writes a line or names a logger.
type lazySink struct {
	applied logr.LogSink
	pending []any
}

// sink is applied with the pending values.
func (s *lazySink) sink() logr.LogSink {
	if len(s.pending) == 0 {
		return s.applied
	}
	return s.applied.WithValues(s.pending...)
}

// Init does nothing: the sink underneath was initialized when base was
// made, and initializing it again would count logr's frame twice.
func (s *lazySink) Init(logr.RuntimeInfo) {}

func (s *lazySink) Enabled(level int) bool { return s.applied.Enabled(level) }

func (s *lazySink) Info(level int, msg string, keysAndValues ...any) {
	s.sink().Info(level, msg, keysAndValues...)
}

func (s *lazySink) Error(err error, msg string, keysAndValues ...any) {
	s.sink().Error(err, msg, keysAndValues...)
}

func (s *lazySink) WithValues(keysAndValues ...any) logr.LogSink {
	return &lazySink{applied: s.applied, pending: append(slices.Clip(s.pending), keysAndValues...)}
}

func (s *lazySink) WithName(name string) logr.LogSink {
	return &lazySink{applied: s.sink().WithName(name)}
}

func (s *lazySink) WithCallDepth(depth int) logr.LogSink {
	cd, ok := s.applied.(logr.CallDepthLogSink)
	if !ok {
		return s
	}
	return &lazySink{applied: cd.WithCallDepth(depth), pending: s.pending}
}
