package reexec

// The variables that make a copy of the program a runner, a sweep or a
// watch. Every variable of the executor's own starts with ControlPrefix
// and is never passed on to an action.
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
