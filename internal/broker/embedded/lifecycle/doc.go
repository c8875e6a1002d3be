// Package lifecycle is the broker's OSB semantics, free of HTTP: provision,
// update, deprovision, bind, unbind, fetch and last_operation, each deciding
// the answer the OSB v2.17 specification prescribes (201/200 synchronous,
// 202 asynchronous, 200 identical repeat, 409 conflicting repeat, 410 gone,
// 422 AsyncRequired / ConcurrencyError, 400 invalid) and, when there is work
// to do, creating the job in the same transaction that takes the instance's
// lock (one job per instance at a time).
//
// Every mutating verb follows one sequence (mutate.go): check ids and body,
// load what it acts on, check it against the spec, build the job, then in
// one transaction reload, check the lock, detect a repeat and store the job,
// and answer. A verb's file holds only what is particular to it.
//
// Synchronous or asynchronous: with accepts_incomplete=true the request
// waits up to SyncWindow for the job; a job that ends in time is answered
// synchronously (201/200, or its failure as 500 ActionFailed), otherwise
// 202 with the operation. Without accepts_incomplete, a plan whose bundle
// declares itself asynchronous is refused at once with 422 AsyncRequired
// (nothing is started); any other runs synchronously, its action bounded
// by SyncTimeout, and the answer is its outcome.
//
// Identifiers are checked on every operation (ids.go) before anything is
// stored or run. Any request that meets a running operation of its
// instance is answered 422 ConcurrencyError (only a repeat with
// accepts_incomplete of the very operation that runs gets 202). An action
// that refuses the request (exit status 65) is answered 400 or 422
// ActionRefused, and a refused provision or bind leaves nothing behind.
// An identical provision of an instance whose provision failed runs it
// again. last_operation tells an identifier the broker never knew (404)
// from an instance or binding it deleted (410, from the store's gone
// records).
//
// Requests carry the osbapi body they arrived with; answers are osbapi
// types or Results. The server package maps Results and *Error to HTTP.
package lifecycle
