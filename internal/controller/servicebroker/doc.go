// Package servicebroker is the controller of ServiceBrokers: it loads each
// broker's catalog into the catalog cache that admission reads, and
// summarizes it in the broker's status. It runs on every replica, leader
// or not, because each replica's admission reads its own cache.
package servicebroker

// The catalog reconciler watches ServiceBrokers and writes each catalog's
// summary and Ready condition into the broker's status; it sets the
// refresh annotation when admission found the catalog's ids changed, and
// removes it once the catalog was read again.
//
// +kubebuilder:rbac:groups=lockstep.dev,resources=servicebrokers,verbs=list;watch;patch
// +kubebuilder:rbac:groups=lockstep.dev,resources=servicebrokers/status,verbs=patch
