// Package render renders the CustomResourceDefinition of a typed kind: the
// kind of its own that a service of a broker's catalog gets, in the group
// services.lockstep.dev, so that `kubectl explain` shows the broker's
// parameters and the API server checks what it can of them. It is pure: it
// reads a service as the catalog has it and returns a CRD and a Report; it
// writes nothing and calls nothing.
//
// # Names
//
// NamesFor makes the kind from the service name ("postgresql-db" becomes
// PostgresqlDb), or takes the administrator's, with the administrator's
// plural and short names when given; plural, singular and list kind
// follow, a short name made from words (the initials of two or more; of
// one, its first letter and next consonants) where it is not taken, and
// the categories lockstep and lockstep-services. ServedNames are the names
// of the resources the cluster serves, which no kind takes. The CRD
// carries the broker, the service name and the service's OSB id in
// annotations (and labels, where they fit): the caller finds an offering's
// existing CRD by its id and passes its kind back in Options.Kind, so that
// a renamed service keeps its kind.
//
// # The schema of spec.parameters
//
// It is the union of every plan's create and update schemas (compiled by
// internal/validate/schema, so that every draft reads as lockstep's webhook
// reads it), projected into a structural schema. The rule is that the CRD
// is never stricter than the schemas: whatever a plan's schema accepts,
// the API server accepts. lockstep's webhook checks the plan's full schema
// and stays authoritative; where the CRD cannot say what a schema says, it
// accepts more, and the Report lists the keyword with its place and why
// (bounds and enums the plans differ in, a required member only some
// plans require or an update may remove). A member every plan requires at
// creation and no update removes is required (its description says which
// plans require it where it is not); Unrequire takes out what objects
// made before lack.
// The translations and drops, and the union of plans, are described in
// docs/design.md ("Typed kinds: how a catalog schema becomes a CRD
// schema").
//
// Every rendering is bounded: nesting (24 levels), "$ref" inside "$ref" (8),
// subschemas looked at (20000 per schema), properties (2000), enum values
// (1000) and the size of the schema (512 KiB); beyond them the value, or the
// whole of spec.parameters, is free JSON and the Report says so. The CRD is
// checked in-process as the API server checks it when it is created
// (Validate); a rule or a schema it would refuse is left out, and the
// Report says so too.
//
// # Rules
//
// A parameter that is in a plan's create schema but not in its update
// schema gets a transition rule on spec, built with internal/validate/celrules:
// when the object's plan makes it create-only, it may not be set, removed
// or changed, unless the old or the new object takes parameters from
// Secrets (then the webhook, which sees the merged values, decides). A
// service whose plans may not all change plan gets a rule on spec.plan.
// Parameters a rule cannot compare exactly (free JSON, names CEL cannot
// write) are left to the webhook, listed in the Report.
//
// # Catalog changes
//
// Keep keeps in a newly rendered schema of spec.parameters what objects of
// the kind set that the CRD's schema has and the new one does not, at any
// depth, marked deprecated (the API server would otherwise prune it from
// the objects), and names the values objects set whose members the new
// schema would prune because it gives them another type (RetypedError);
// Loses says, from the two schemas, whether there can be any.
//
// # The rest of the kind
//
// spec.brokerName, spec.externalID, spec.parametersFrom and
// spec.parametersFromGeneration, with their rules, the status, and the
// Ready, In Sync, Reason (-o wide) and Age printer columns are taken from
// the generated ServiceInstance CRD (deploy/crds), so they never drift from
// it. Sensitive lists the parameters a schema marks writeOnly or format
// password; their descriptions say to set them through spec.parametersFrom.
package render
