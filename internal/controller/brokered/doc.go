// Package brokered holds what the controllers of broker-backed objects
// (ServiceInstances, ServiceBindings) share:
//
//   - finalize.go: Finalize, lockstep's finalizer for an object being
//     deleted;
//   - status.go: PatchStatus, the one way their status is written.
package brokered
