// Package check holds lockstep's promises as checks of what a robustness
// run left behind and what happened on the way (a Snapshot): the API
// server's objects, every operation record seen, the brokers' own state
// and every exchange with them, the requests the clients made and the
// answers they got, and everything lockstep wrote that a person reads
// (logs, events, status, metrics). Each check returns the Violations of
// one promise; All runs them all. The checks are pure functions: they
// decide from the Snapshot alone, never from timing.
//
//   - broker.go: what the broker holds equals what the API server holds,
//     or the object's InSync condition says why not, with a true reason;
//   - leak.go: nothing at a broker that no object accounts for (except
//     what was detached or observed), nothing created twice under one id,
//     no id claimed by two objects;
//   - answers.go: every answer a client got was true;
//   - final.go: every operation final, every lock released, nothing
//     stuck deleting unless its condition names the way out;
//   - credentials.go: no credential anywhere but its Secret.
package check
