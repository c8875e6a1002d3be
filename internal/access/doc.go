// Package access decides which namespaces may use which services and plans
// of a broker, from the access rules on its ServiceBroker (spec.access): a
// namespace may provision a plan, move an instance to it, or bind an
// instance of it only where a rule that selects the namespace (a label
// selector) opens the plan (service and plan name patterns, in which *
// stands for any run of characters). A broker without rules opens every
// plan to every namespace.
//
//   - rules.go: Compile turns a ServiceBroker's rules into Rules, whose
//     Decide says whether a namespace, by its labels, may use a plan, and
//     why not, naming the rules; Of says which namespaces may use a plan,
//     for the marketplace;
//   - limits.go: the per-plan limits of the rules (spec.access[].limits),
//     as Cloud Foundry's service quotas: Limits says which apply to a
//     namespace, Limit.Counts which plans each counts; admission counts
//     a namespace's instances against them;
//   - store.go: the compiled rules of every broker, kept by the
//     servicebroker controller in every replica, read by admission.
//
// It does no I/O; admission reads the namespace's labels from its cache.
package access
