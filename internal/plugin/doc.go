// Package plugin is `kubectl lockstep`, the kubectl plugin of lockstep
// (the binary kubectl-lockstep, cmd/kubectl-lockstep): what a user of
// ServiceInstances and ServiceBindings types, in the words of the objects
// lockstep writes.
//
//	marketplace            services and plans of every broker, with prices and parameters
//	describe plan PLAN     a plan's parameters as a table, with every constraint (-o yaml: its schemas)
//	provision NAME         write a ServiceInstance, or with --kind an object of a typed kind, wait until it is Ready
//	bind NAME              write a ServiceBinding (of an instance of any kind), wait until its Secret is there
//	history OBJECT         the object's BrokerOperations, oldest first, each object of the name apart
//	why OBJECT             why it is not Ready or not InSync, and the way out
//	why namespace NS       why a namespace is stuck, and the way out
//	detach OBJECT|--all    let go of objects at their broker (reconcile policy detach-on-delete)
//	adopt instance|binding NAME   take over what a broker already holds (lockstep.dev/adopt)
//
// An OBJECT is KIND/NAME, as kubectl names it: si/NAME, sbd/NAME, or an
// object of a typed kind by its kind, plural or short name, found through
// the API server's discovery (kinds.go); or NAME when only one kind has
// it. kubectl's global flags come after the plugin's name, where kubectl
// passes them on.
//
// The plugin only reads and writes objects through the API server, as the
// user who runs it: lockstep answers every change itself (admission), and
// a refusal is printed as it came, as kubectl prints it. Shell completion
// (cobra) completes plans, services, instances and bindings from the
// cluster.
package plugin
