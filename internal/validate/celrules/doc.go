// Package celrules turns the field policies of lockstep's API types into
// CEL validation rules (x-kubernetes-validations) on their CRD schemas, so
// that the API server itself refuses what it can before any webhook is
// called.
//
// The rules come from the same compiled policies the admission webhook
// checks (internal/validate), and the shapes from the CRD schema that
// controller-gen wrote, which is what CEL sees. Which fields get a rule:
//
//   - create-only fields outside lists and maps: one transition rule each,
//     on the top-level property that holds them (spec), which is present in
//     every object, so that setting, removing and changing the field are all
//     caught. As in the engine, an absent field equals its zero value ("",
//     0, false, an empty list or map). Scalars are compared by value, lists
//     element by element, objects deeply.
//   - create-only fields whose contents CEL cannot see (raw JSON kept with
//     x-kubernetes-preserve-unknown-fields, such as parameters) get no rule:
//     the engine checks them. So do tagged fields inside list elements or
//     map values, which the engine matches by index and key.
//   - read-only fields get no rule. Those under status need none: with the
//     status subresource the API server drops status on create and keeps
//     it on every update of the main resource. The others (the marketplace
//     kinds' specs) are written by lockstep itself, and a CEL rule cannot
//     tell lockstep from a user; the marketplace guard webhook does.
//
// The engine stays the source of truth: what a rule refuses, the engine
// refuses too, and it still covers everything the rules leave out.
// A test in test/celrules applies the same object pairs to the API server
// and to the engine and checks that they agree.
package celrules
