package app

import (
	"errors"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
)

// A logger with deferred values writes the same lines as the one it wraps,
// with the same caller, in every order of values, names and lines.
func TestLazyValuesWritesTheSameLines(t *testing.T) {
	tests := []struct {
		name string
		log  func(logr.Logger)
	}{
		{"a line, no values", func(l logr.Logger) { l.Info("hello", "k", 1) }},
		{"values then a line", func(l logr.Logger) { l.WithValues("a", 1).WithValues("b", "two").Info("hello", "k", 1) }},
		{"values, a name, values", func(l logr.Logger) {
			l.WithValues("a", 1).WithName("ctl").WithValues("b", 2).Error(errors.New("boom"), "failed", "k", 3)
		}},
		{"siblings share no values", func(l logr.Logger) {
			parent := l.WithValues("a", 1)
			one, two := parent.WithValues("b", 2), parent.WithValues("c", 3)
			one.Info("one")
			two.Info("two")
		}},
		{"a level", func(l logr.Logger) { l.WithValues("a", 1).V(1).Info("detail"); l.V(2).Info("hidden") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			record := func(lines *[]string) logr.Logger {
				return funcr.New(func(prefix, args string) { *lines = append(*lines, prefix+" "+args) },
					funcr.Options{LogCaller: funcr.All, Verbosity: 1})
			}
			var want, got []string
			tt.log(record(&want))
			tt.log(LazyValues(record(&got)))
			assert.NotEmpty(t, want)
			assert.Equal(t, want, got)
		})
	}
}

// Values given to a logger that writes no line are never handed to the
// logger underneath (zap would encode them).
func TestLazyValuesAppliesNothingUnwritten(t *testing.T) {
	counted := &countingSink{LogSink: funcr.New(func(string, string) {}, funcr.Options{}).GetSink()}
	log := LazyValues(logr.New(counted))
	quiet := log.WithValues("controller", "instance").WithValues("reconcileID", "x")
	quiet.V(1).Info("not enabled")
	assert.Zero(t, counted.withValues, "no line written: no values applied")

	quiet.Info("written")
	assert.Equal(t, 1, counted.withValues, "one line: the values applied once, together")
}

type countingSink struct {
	logr.LogSink
	withValues int
}

func (s *countingSink) Enabled(level int) bool { return level == 0 }

func (s *countingSink) WithValues(keysAndValues ...any) logr.LogSink {
	s.withValues++
	return s
}
