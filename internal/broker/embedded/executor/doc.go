// Package executor runs bundle actions.
//
// An Executor gets an Invocation (bundle, action, input document, bundle
// state) and returns the action's Result (output and state updates). The
// default is Mux: built-in programs (builtin:noop, builtin:echo) run in the
// broker, anything else runs as a local process (Process).
//
// The process protocol, in full:
//
//   - The program runs with the bundle directory as working directory, in a
//     process group of its own, with a clean environment (never the
//     broker's own, which holds its secrets), with umask 027, within its
//     limits (Limits: memory and CPU time per process, processes of its
//     user, wall time), started by a copy of the broker's program that sets
//     them and becomes the program (package reexec).
//   - With Process.Users, each running action has a user and group of its
//     own and no other group: it cannot read the broker's files, its
//     environment (/proc), the run directory of another action, or signal
//     another action's processes. Its run directory is the broker's, in the
//     action's group (setgid); the bundle is readable by every user.
//   - The input document (Input, JSON) is on stdin and in the file named by
//     LOCKSTEP_INPUT_FILE: the complete input, whatever its size.
//     Parameters are never command-line arguments. For convenience small
//     values are also in the environment: top-level scalar parameters as
//     param_<key>, the ids as LOCKSTEP_ACTION, LOCKSTEP_INSTANCE_ID,
//     LOCKSTEP_BINDING_ID, LOCKSTEP_SERVICE_ID, LOCKSTEP_PLAN_ID and
//     LOCKSTEP_OPERATION. A value longer than MaxEnvValue or holding a NUL
//     byte is only in the input document, so that no input can keep an
//     action from starting.
//   - Bundle state: the instance's saved state is in the input document
//     (state) and in the environment as state_<key> (every action but a
//     first provision, which has none). To save state, write lines
//     key=value to the file named by LOCKSTEP_STATE_FILE; they are merged
//     into the saved state (an empty value removes the key; a value
//     holding a NUL byte breaks the protocol). State written is kept even
//     when the action fails, so that a later deprovision can clean up what
//     a failed action left.
//   - The input, output and state files are in the action's run directory
//     ($HOME and $TMPDIR too). The broker reads the output and state files
//     only as regular files of their own name: a symbolic link, a file with
//     other names (hard links) or a FIFO in their place is a protocol
//     error. Write into them, or replace them with a file the group can
//     read.
//   - Output: write a JSON object to the file named by LOCKSTEP_OUTPUT_FILE:
//     {"credentials": {...}} from bind, {"dashboard_url": "..."} from
//     provision or update, and optionally {"description": "..."}: a message
//     for the user, shown as the operation's description (on failure too).
//     A failed update or deprovision may say "instance_usable" and a failed
//     update "update_repeatable" (booleans).
//   - Exit status 0 is success; RefuseExitCode (65) is a refusal: the
//     action judged the request unacceptable and changed nothing; anything
//     else is failure. The description is the output's description, else
//     the last line of stderr, else the exit status.
//   - When the action ends (or is stopped at its timeout), whatever it left
//     running in its process group is killed; with Users, every process of
//     its user, wherever it went (a sweep: a copy of the broker's program
//     started as that user), before the user serves another action. If the
//     broker process dies, the action's first process is killed too
//     (parent-death signal); the rest carry LOCKSTEP_RUNNER
//     (Process.RunnerID), by which a watch process (Watch, a copy of the
//     broker's program started with it) finds and ends them the moment the
//     broker dies, SIGKILLed too, and KillRunnerProcesses again when a
//     broker starts again; with Users the watch, and a broker that starts,
//     end every process of those users.
package executor
