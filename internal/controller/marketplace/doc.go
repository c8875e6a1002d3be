// Package marketplace is the controller that writes each registered
// broker's catalog as ServiceOfferings and ServicePlans (see
// internal/marketplace for what it writes). It reads the catalog the
// servicebroker controller loaded into the replica's catalog cache, runs in
// the elected replica only (one writer), and writes an object only when it
// differs from what the catalog says. A plan that leaves the catalog is
// marked removedFromCatalog while a ServiceInstance or an object of a
// typed kind uses it (by broker, service and plan name) and deleted once
// none does; a service goes with its last plan. Everything a ServiceBroker's catalog wrote is owned by it, so
// the garbage collector deletes it with the broker.
//
// It also writes the typed kind of each service the broker's
// spec.typedKinds activates (typedkind.go): the kind's names, its CRD as
// internal/typed/render renders it and what that CRD cannot hold, in the
// offering's status.typedKind and TypedKindReady condition. A kind name
// two activated services of any brokers want goes to one of them, by an
// order every broker's sync applies alike; the other says why it has
// none. A kind is rendered again only when its service or its names
// change.
//
// The same pass applies each kind's CRD (crd.go: a server-side dry run,
// then a server-side apply; a refused update keeps the CRD as it was)
// with an edit and a view ClusterRole (roles.go), keeps a parameter a new
// schema drops while objects of the kind set it (and holds one that would
// prune what they set by changing its type), and retires a kind the
// offering no longer has: its CRD and roles are deleted once no object of
// it is left, the CRD first marked retiring for a grace (lockstep's
// webhook refuses creates of the kind meanwhile) so that no object is
// created that the deletion would take with it. The offering's TypedKindReady condition says which of these
// it is at; CRDs lockstep applied are watched, so it follows the API
// server establishing them, kind by kind (established.go). The objects of
// a kind are listed only when the answer matters: a plan leaves the
// catalog, a parameter leaves an applied CRD's schema, or the kind is
// retired.
package marketplace

// The catalog sync (leader only) writes every broker's catalog as
// ServiceOfferings and ServicePlans: create; update when the catalog
// changed; delete what left the catalog and no instance uses; and their
// status (removedFromCatalog, SchemasUsable). It reads them from its cache.
//
// +kubebuilder:rbac:groups=lockstep.dev,resources=serviceofferings;serviceplans,verbs=list;watch;create;update;delete
// +kubebuilder:rbac:groups=lockstep.dev,resources=serviceofferings/status;serviceplans/status,verbs=update
