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
//     broker's own, which holds its secrets).
//   - The input document (Input, JSON) is on stdin and in the file named by
//     LOCKSTEP_INPUT_FILE. Parameters are never command-line arguments.
//     For convenience top-level scalar parameters are also in the
//     environment as param_<key>, and the ids as LOCKSTEP_ACTION,
//     LOCKSTEP_INSTANCE_ID, LOCKSTEP_BINDING_ID, LOCKSTEP_SERVICE_ID,
//     LOCKSTEP_PLAN_ID and LOCKSTEP_OPERATION.
//   - Bundle state: the instance's saved state is in the environment as
//     state_<key> (every action but provision, which has none). To save
//     state, write lines key=value to the file named by LOCKSTEP_STATE_FILE;
//     they are merged into the saved state (an empty value removes the
//     key). State written is kept even when the action fails, so that a
//     later deprovision can clean up what a failed action left.
//   - Output: write a JSON object to the file named by LOCKSTEP_OUTPUT_FILE:
//     {"credentials": {...}} from bind, {"dashboard_url": "..."} from
//     provision or update, and optionally {"description": "..."}: a message
//     for the user, shown as the operation's description (on failure too).
//   - Exit status 0 is success; anything else is failure. The failure's
//     description is the output's description, else the last line of
//     stderr, else the exit status.
//   - When the action ends (or is stopped at its timeout), whatever it left
//     running in its process group is killed. If the broker process dies,
//     the action is killed too (parent-death signal).
package executor
