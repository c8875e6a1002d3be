// Package brokercall is the one way lockstep calls a broker. Admission,
// drift correction, the operations reconciler's re-apply and
// compensation, orphan mitigation and the finalizers all go through it,
// so that a broker gets the same request whoever asks:
//
//   - request.go: what a call is (Request: the object, the verb, the OSB
//     ids and parameters, who asks), built from an object (ForInstance,
//     ForBinding) or from the record of an operation to complete
//     (ForRecord);
//   - context.go: the OSB context of an instance or binding, built here
//     and nowhere else;
//   - identity.go: who asks (Who): the requester, or lockstep itself on
//     someone's behalf, as the originating identity header says;
//   - send.go: the broker call itself, its last_operation polls within the
//     caller's deadline, and, for a bind, the credentials (Send);
//   - verdict.go: what an answer means, the same way for every verb: done,
//     refused (nothing changed at the broker), unknown (the request went
//     out and no answer came back), or still running; and the record's
//     phase that follows from it;
//   - carry.go: Carry, which takes the object's lock (carrying the
//     operation's record, the one API server write before the call),
//     calls, and records the answer after it (internal/journal);
//   - ask.go: asking a broker how an operation whose outcome is unknown
//     ended (last_operation, or a fetch where the broker allows one);
//   - refresh.go: a refusal of ids the broker's catalog no longer has
//     refreshes the catalog, at most once per interval.
//
// Dependencies point one way: admission and the controllers import this
// package; it imports the journal, the catalog cache and the OSB client,
// and nothing that knows of webhooks or reconcilers.
package brokercall
