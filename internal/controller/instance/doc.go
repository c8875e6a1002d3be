// Package instance is the controller of ServiceInstances, and the only
// writer of their status:
//
//   - reconciler.go: what it watches (instances, and the BrokerOperations
//     of each), and the order of one pass;
//   - status.go: what the journal says of the instance (its last answered
//     operation, what the broker confirmed, an outcome not known yet);
//   - resync.go: the instance read again from its broker at a jittered
//     interval and compared with what lockstep last applied;
//   - correct.go: drift corrected under the manage policy, by re-applying
//     the persisted spec as an update journaled under lockstep's name;
//   - finalizer.go: the lockstep.dev/broker finalizer of an instance
//     being deleted.
//
// It runs in the elected replica only.
package instance

// The instance reconciler adds and removes the lockstep.dev/broker
// finalizer (patch) and writes status from what the broker confirmed.
//
// +kubebuilder:rbac:groups=lockstep.dev,resources=serviceinstances,verbs=list;watch;patch
// +kubebuilder:rbac:groups=lockstep.dev,resources=serviceinstances/status,verbs=patch
