package app

import (
	"context"
	"errors"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
)

// A normal stop gives the lead up: one line of information, not an error
// (with the stack trace a production logger adds to errors). The lead lost
// while running is still an error.
func TestLeadGivenUpOnStopIsNoError(t *testing.T) {
	var lines []string
	base := funcr.New(func(prefix, args string) { lines = append(lines, prefix+" "+args) }, funcr.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	log := quietStop(ctx, base).WithName("manager")

	log.Error(errors.New(errLeaderElectionLost), "error received after stop sequence was engaged")
	cancel()
	log.Error(errors.New(errLeaderElectionLost), "error received after stop sequence was engaged")
	log.Error(errors.New("something else"), "another error")

	assert.Len(t, lines, 3)
	assert.Contains(t, lines[0], `"error"="leader election lost"`, "lost while running: an error")
	assert.Contains(t, lines[1], `"msg"="stopped: gave the lead up"`)
	assert.NotContains(t, lines[1], `"error"`, "on a normal stop: information")
	assert.Contains(t, lines[2], `"error"="something else"`)
}

// The stop-aware logger names the line that logged, not a frame of its own.
func TestQuietStopKeepsTheCaller(t *testing.T) {
	record := func(lines *[]string) logr.Logger {
		return funcr.New(func(prefix, args string) { *lines = append(*lines, prefix+" "+args) }, funcr.Options{LogCaller: funcr.All})
	}
	var want, got []string
	logTwo := func(l logr.Logger) {
		l.WithValues("a", 1).Info("hello")
		l.WithName("n").Error(errors.New("boom"), "failed")
	}
	logTwo(record(&want))
	logTwo(quietStop(context.Background(), record(&got)))
	assert.Equal(t, want, got)
}
