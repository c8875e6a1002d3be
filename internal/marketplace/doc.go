// Package marketplace turns a broker's catalog (a catalog.Entry) into the
// ServiceOfferings and ServicePlans that show it to people: their readable
// names, the parameter list of a plan derived from its create schema, which
// namespaces may use a plan (the broker's access rules, internal/access),
// what makes a broker's schema unusable to lockstep, and whether an object as
// stored differs from what the catalog says (so that the catalog sync
// writes only what changed). It does no I/O; the marketplace controller
// (internal/controller/marketplace) writes what it computes.
package marketplace
