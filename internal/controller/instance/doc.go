// Package instance is what is particular to ServiceInstances in the
// reconciler of broker-backed objects (internal/controller/brokered):
//
//   - instance.go: the Kind, New, the controller of ServiceInstances, and
//     NewTyped, the controller of the objects of a typed kind, read and
//     written as the model (internal/typed/object);
//   - status.go: what the journal says of the instance (its last answered
//     operation, what the broker confirmed, an outcome not known yet);
//   - resync.go: what resync compares (what lockstep last applied, the
//     plan and parameters the broker holds) and what it does about drift;
//   - correct.go: drift corrected under the manage policy, by re-applying
//     the persisted spec as an update journaled under lockstep's name;
//   - createonly.go: create-only parameters, which no update can correct.
package instance
