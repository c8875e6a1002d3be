// Package typedcrds installs the CRDs that internal/typed/render makes of
// the services of its corpus (schemas in the shapes public brokers
// publish) into a real kube-apiserver and etcd (controller-runtime
// envtest) with no webhooks, and checks that:
//
//   - each CRD is accepted and becomes Established;
//   - objects whose parameters a plan's schema accepts (as lockstep's
//     webhook checks them) are accepted by the API server too: the CRD is
//     never stricter than the broker;
//   - parameters the plan's schema refuses are refused by the API server
//     where the CRD keeps the rule (a bound, an enum, a required member);
//   - a change of a create-only parameter, and a plan change the broker
//     does not allow, are refused by the API server itself, with a message
//     that says what to do, and the unchanged update passes.
package typedcrds
