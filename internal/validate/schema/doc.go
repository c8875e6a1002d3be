// Package schema checks service parameters against the JSON Schemas an Open
// Service Broker publishes per plan, and derives the plan's create-only
// parameters from them.
//
// A broker's catalog may carry, per plan, a schema for the parameters of a
// provision (service_instance.create.parameters), of an update
// (service_instance.update.parameters) and of a bind
// (service_binding.create.parameters). [Compile] compiles them once, when
// the catalog is loaded; the [PlanSchemas] it returns then checks the
// spec.parameters of a ServiceInstance or ServiceBinding during admission
// and returns a field.ErrorList, like every check in internal/validate. The
// package knows nothing of webhooks or HTTP.
//
// # Drafts
//
// A schema names its draft in "$schema" (draft-04, -06, -07, 2019-09 and
// 2020-12 are understood). A schema without "$schema" is read as draft-04,
// the OSB default. If it is not a valid draft-04 schema (it uses draft-06+
// forms such as a numeric exclusiveMinimum or a boolean subschema), it is
// read as draft-07 instead; if that fails too, Compile reports both
// failures. Keywords a draft does not know are ignored, as the drafts
// require: a draft-04 schema's "const" constrains nothing. "format" is
// asserted for drafts up to draft-07 and not for 2019-09 and 2020-12 (the
// drafts' own defaults); content keywords are never asserted.
//
// Compilation never fetches anything: "$ref" resolves only within the
// schema itself (the draft metaschemas are built in). A reference to a
// remote or file URL makes Compile fail with a message saying so.
//
// # Create-only parameters
//
// A property that is in the plan's create schema but not in its update
// schema cannot change after creation: setting it, removing it or changing
// its value (compared as JSON values: 1 equals 1.0, key order does not
// matter) is refused. The rule applies to top-level "properties" and
// recursively to nested ones: when both schemas know "a" but only the
// create schema knows "a.b", then "a.b" is create-only. Details:
//
//   - A plan without an update schema has no create-only parameters, since
//     nothing says which parameters may be updated.
//   - A property counts as "in" a schema when the schema, or any subschema
//     that applies to the same object (reached through "$ref", "allOf",
//     "anyOf", "oneOf", "then", "else", "dependentSchemas" or schema-valued
//     "dependencies"), lists it under "properties"; on the update side a
//     matching "patternProperties" pattern counts too. A property that the
//     update schema only allows as the false schema counts as absent.
//   - An update (sub)schema that says nothing about its members, such as
//     {} or {"type": "object"} (no "properties", no "patternProperties",
//     no "additionalProperties": false), accepts any member on update, so
//     nothing below it is create-only.
//   - Recursive schemas are followed once around each cycle, at most 32
//     levels deep and through at most 10000 objects in all.
//
// On update, [PlanSchemas.UpdateParameters] removes the create-only
// properties from the parameters, and the update schema is applied to what
// remains: that is what lockstep sends to the broker, whose update schema
// may well forbid the create-only properties.
//
// # Limits
//
// Parameters that are checked against a schema may nest objects and
// arrays at most 1000 levels deep, and their numbers may have at most 1000
// characters and a decimal exponent between -10000 and 10000: the schema
// library computes with exact rationals, and 1e999999999 would cost it
// unbounded time and memory (it even panics on such numbers). Parameters
// beyond the limits are refused with an error that says where. Any panic of
// the library is recovered and reported as an internal error.
//
// # Cost
//
// Checks run on every admission request, so the common case is fast:
// parameters are decoded by a one-pass decoder that behaves like
// encoding/json with UseNumber, and a valid value is recognised by
// quickValid, which mirrors the library's validator for the usual
// keywords without its exact-rational arithmetic and error bookkeeping.
// Only parameters it is not sure of (invalid ones, or schemas with
// "oneOf", "not", "if" and the like) go through the library, which then
// decides and explains.
//
// # Errors
//
// Every violation is reported, one field.Error each, in a deterministic
// order, with the field path of the offending value below spec.parameters
// (JSON pointer /list/0/name becomes spec.parameters.list[0].name), the
// value as compact JSON (cut at about 120 bytes), and a message that names
// the schema, the JSON pointer ("/" is the whole parameters object) and
// the rule. Each error's Origin is the JSON Schema keyword that failed
// ("false" for a false schema). A missing required parameter is a Required
// error and a parameter the schema does not allow a Forbidden error, each
// at the parameter's own path. A failed "anyOf" or "oneOf" is one error
// that lists what each alternative wanted, since any one of them would do.
package schema
