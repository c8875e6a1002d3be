// Package osbapi is the wire model of the Open Service Broker (OSB) API
// v2.17: the JSON bodies that a platform and a broker exchange, as Go types,
// with the header names and the API version.
//
// Both sides of the API use it: lockstep's OSB client, the embedded broker
// (its HTTP server, its lifecycle and its bundle catalog) and the in-process
// broker of the tests. The package holds what the specification defines and
// the catalog rules that follow from it (a plan's own bindable and
// plan_updateable override its service's, ids are unique); what one side
// makes of an answer (error classification, polling) stays on that side.
//
// Optional fields are omitted when empty, as the specification allows;
// decoding ignores fields the types do not name, as it requires.
package osbapi
