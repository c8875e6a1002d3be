// Package admission holds lockstep's webhook handlers for ServiceInstance
// and ServiceBinding, and for the objects of typed kinds, which go through
// the ServiceInstance handlers mapped to instances (typed.go).
//
// Each kind has a mutating handler (a controller-runtime Defaulter: default
// values and the lockstep.dev/broker finalizer, served by
// admission.WithDefaulter) and a validating handler (a Validator) built as
// an explicit chain of small steps. Every webhook is a controller-runtime
// admission.Webhook (register.go, whose markers generate the webhook
// configurations); the validators' admission.Handler (handler.go) reads
// the request's raw objects, decides unchanged updates from them before
// decoding anything, and decodes only the parts the chain reads
// (split.go). The chain runs in this order (docs/design.md, "How a request
// is decided"):
//
//  1. classify the request (request.go, handler.go): metadata-only updates
//     and updates of objects being deleted are allowed at once, with no
//     checks at all, so that nothing ever blocks finalizer removal;
//  2. static checks (no I/O beyond in-memory caches, except the Secrets
//     that spec.parametersFrom names, read uncached: parameters_from.go,
//     and the SubjectAccessReviews that ask what the requester may do:
//     authorizer.go),
//     in three stages declared in one place per kind (instance.go,
//     binding.go): the Checks of the request alone (field policies, spec,
//     hooks; on a create, the permission to adopt, adopt_access.go, and
//     whether another object holds its external id, external_id.go); the
//     Resolver (resolve.go), which returns what the request
//     names as a Target (target.go: the broker's catalog entry, the plan,
//     the bound instance, the parameters with those from Secrets merged
//     in); the TargetChecks of the request against that Target (catalog
//     rules, an instance ready to bind, the broker's access rules:
//     plan_access.go, the parameters' size). Attributes describe the
//     request alone and no stage changes them; the Target is passed explicitly and
//     only read. All field errors are reported together, in that order, as
//     one 422, as apierrors.NewInvalid builds it (invalid.go), so that
//     kubectl shows the field paths; a Target resolved in part leaves its
//     missing parts nil and the later checks still report theirs;
//  3. the limits: what the API server would refuse after lockstep, which
//     lockstep can count itself, is refused with its status (403): the
//     namespace's ResourceQuotas on a create (quota.go, internal/quota)
//     and the per-plan limits of the broker's access rules
//     (plan_limits.go); dry runs included;
//  4. dry-run stops here: the broker is never called for a dry run;
//  5. broker steps, which get the Target: where it is on, the preflight
//     (preflight.go) tries the change first as a server-side dry run by
//     lockstep, so that another webhook's or a policy's refusal is the
//     answer with nothing sent; then the change is carried out at the
//     broker through the one protocol of a broker call (carry.go,
//     internal/brokercall): the object's lock (keyed on its kind and
//     external id), carrying the operation's record, is the one API
//     server write before the call; a create asks once more under it
//     whether another object holds its id; the record with the broker's
//     answer is written after the reply; the answer is
//     classified the same way for every verb (done, refused, unknown), and
//     outcome.go says it to the requester.
//
// The checks themselves live in internal/validate and know nothing of
// webhooks; this package decodes, calls and answers.
package admission
