// Package reexec is what the copies of the broker's program that the
// executor starts do: the program that links it (any program that links
// the executor) becomes, when started with one of its variables, one of
// these, before any other package of the program sets itself up:
//
//   - the runner of one action (RunProgramEnv): it sets the action's
//     limits on itself (Limits) and becomes the action's program, with its
//     environment less the executor's own variables;
//   - the sweep of one action user (SweepEnv): running as that user, it
//     kills every process of the user, says so, and empties the run
//     directory once its stdin closes (StartSweep);
//   - the watch of a broker process (WatchRunnerEnv): it waits for the
//     broker to die, then ends what the broker's actions left running.
//
// It imports only the standard library, so that a copy becomes what it
// was started as after a few milliseconds, not after the broker's whole
// program set itself up.
package reexec

import "strings"

// The variables that make a copy of the program one of the above. Every
// variable of the executor's own starts with ControlPrefix and is never
// passed on to an action.
const (
	ControlPrefix = "LOCKSTEP_EXECUTOR_"
	// RunProgramEnv names the program a runner becomes.
	RunProgramEnv = ControlPrefix + "RUN_PROGRAM"
	// RunLimitsEnv holds the limits a runner sets (Limits.Encode).
	RunLimitsEnv = ControlPrefix + "RUN_LIMITS"
	// SweepEnv holds the run directory a sweep empties ("-": none).
	SweepEnv = ControlPrefix + "SWEEP"
	// WatchRunnerEnv holds the runner whose actions a watch ends.
	WatchRunnerEnv = ControlPrefix + "WATCH_RUNNER"
	// WatchParentEnv holds the broker process a watch watches.
	WatchParentEnv = ControlPrefix + "WATCH_PARENT"
	// WatchUsersEnv holds the first and last action user ("first-last")
	// whose processes a watch ends too.
	WatchUsersEnv = ControlPrefix + "WATCH_USERS"
)

// RunnerEnv names the variable of every action's environment that tells
// which broker process (runner id) started it (KillRunnerProcesses).
const RunnerEnv = "LOCKSTEP_RUNNER"

// Self is the broker's own program, as any of its processes sees it. It
// starts even where the program lies in a directory the action's user
// cannot enter.
const Self = "/proc/self/exe"

// Exit statuses of a runner that could not become the action's program.
const (
	ExitCannotRun = 126
	ExitNotFound  = 127
)

// say writes parts and a newline to f. This package does without package
// fmt, which sets itself up late (after reflect), and with it every
// package of the program that comes first in initialization order.
func say(f interface{ WriteString(string) (int, error) }, parts ...string) {
	_, _ = f.WriteString(strings.Join(parts, "") + "\n")
}

// wrap is fmt.Errorf("%s: %w", msg, err) without package fmt.
func wrap(msg string, err error) error { return &wrapped{msg: msg, err: err} }

type wrapped struct {
	msg string
	err error
}

func (w *wrapped) Error() string { return w.msg + ": " + w.err.Error() }
func (w *wrapped) Unwrap() error { return w.err }
