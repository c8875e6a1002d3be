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
// It imports only packages of the standard library that a Go program sets
// up first (not fmt, path/filepath or os/exec, which many packages of the
// broker's program come before in initialization order), so that a copy
// becomes what it was started as after a few milliseconds, not after the
// broker's whole program set itself up.
package reexec
