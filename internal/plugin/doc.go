// Package plugin is `kubectl lockstep`, the kubectl plugin of lockstep
// (the binary kubectl-lockstep, cmd/kubectl-lockstep): what a user of
// ServiceInstances and ServiceBindings types, in the words of the objects
// lockstep writes.
//
//	marketplace            services and plans of every broker, with prices and parameters
//	describe plan PLAN     a plan's parameters as a table (-o yaml: its schemas)
//	provision NAME         write a ServiceInstance, wait until it is Ready
//	bind NAME              write a ServiceBinding, wait until its Secret is there
//	history OBJECT         the object's BrokerOperations, oldest first
//	why OBJECT             why it is not Ready or not InSync, and the way out
//	why namespace NS       why a namespace is stuck, and the way out
//	detach OBJECT|--all    let go of objects at their broker (reconcile policy detach-on-delete)
//	adopt instance|binding NAME   take over what a broker already holds (lockstep.dev/adopt)
//
// The plugin only reads and writes objects through the API server, as the
// user who runs it: lockstep answers every change itself (admission), and
// a refusal is printed as it came, as kubectl prints it. Shell completion
// (cobra) completes plans, services, instances and bindings from the
// cluster.
package plugin
