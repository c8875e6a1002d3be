// Package specs keeps the broker's service specs: the Catalog is the
// in-memory view that requests read, and the Reconciler keeps the stored
// specs in step with the registries.
//
// Reconciliation rules:
//   - Sync fetches every registry. A spec a registry offers is added (or
//     replaced when its content changed, or unmarked when it came back).
//   - A spec that left its registry (or whose registry is no longer
//     configured) is marked: hidden from the catalog, new provisions are
//     refused, existing instances keep updating, binding and deprovisioning.
//   - A failed fetch deletes and marks nothing. After FailureThreshold
//     consecutive failures, that registry's specs that no instance uses are
//     marked.
//   - A bundle that a registry offers but that cannot be read is a failed
//     fetch of that bundle: the spec that came from the same source
//     (directory, tag) is kept, never marked. Status reports such bundles
//     with each registry's latest sync. So is a bundle that Options.Check
//     refuses (one asking for more than the broker's maximum).
//   - Sweep deletes marked specs that no instance uses.
//   - The broker is bootstrapping until every registry has been fetched
//     once, or has failed FailureThreshold times in a row, or EndBootstrap
//     is called (the broker's bootstrap timeout).
package specs
