// Package resync holds what the reconciler of broker-backed objects needs to
// keep an object's status an accurate picture of what its broker holds
// after admission:
//
//   - compare.go: what differs between what lockstep last applied and
//     what the broker answers, as a JSON merge patch, and a message that
//     names the differing fields;
//   - limiter.go: a per-broker bound on concurrent and per-second fetches,
//     so that thousands of objects never flood one broker;
//   - schedule.go: when each object is next due, jittered;
//   - status.go: setting a condition so that an unchanged result writes
//     nothing.
//
// The reconciler of broker-backed objects (internal/controller/brokered)
// fetches, and writes the result as the only writer of their status.
package resync
