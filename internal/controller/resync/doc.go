// Package resync keeps an object's status an accurate picture of what its
// broker holds after admission:
//
//   - compare.go: what differs between what lockstep last applied and
//     what the broker answers, as a JSON merge patch, and the condition
//     that says so;
//   - limiter.go: a per-broker bound on concurrent and per-second fetches,
//     so that thousands of objects never flood one broker;
//   - instances.go, bindings.go: the reconcilers, run in the elected
//     replica; each fetches its object at a jittered interval where the
//     catalog says it is retrievable, writes the InSync condition (and
//     Ready=False when the broker lost the object) only when it changes;
//   - correct.go: under the manage policy, drift is corrected by
//     re-applying the persisted spec, journaled as a BrokerOperation
//     asked by lockstep itself.
//
// A fetch is never made while another operation holds the object's lock:
// the broker is then in the middle of a change that the operations
// reconciler follows.
package resync
