// Package fakebroker is an in-process Open Service Broker (OSB) API v2.17
// broker for lockstep's tests: scriptable, in memory, and nothing like the
// embedded broker beside it (package embedded), which runs real bundles. It
// speaks the wire types of package osbapi, and Config gives an osbclient
// configuration that reaches it.
//
// A Broker is a real HTTP server on 127.0.0.1 (httptest). Left alone it is a
// correct, stateful, synchronous broker: it keeps instances and bindings in
// memory, answers a provision with 201 and an identical repeat with 200, a
// conflicting one with 409, a deprovision with 200 and a repeat with 410, a
// bind with 201 and credentials, and so on. Tests change that per request
// kind (Op) with a queue of scripted answers (Script, ScriptInstance) or a
// standing one (Always): any status, OSB error code and description, raw or
// malformed body, a delay, a hang until the client gives up, a closed
// connection, or an asynchronous answer (202) that completes, or fails,
// after a given number of last_operation polls or a given time. A
// Responder (SetResponder) may pick the answer of every request while the
// broker runs, so that a test switches its behaviour at will.
//
// Every request is recorded on arrival (Calls, Count, WaitForCalls;
// WaitIdle waits until every request was handled) and the in-memory state is
// visible and can be seeded (Instances, Bindings, PutInstance, PutBinding;
// Creations counts how often each was created),
// so that a test can assert that what the broker holds equals what the API
// server holds. SetLatency slows every request down, for benchmarks;
// WithCredentialMarker begins every password with a marker that a test
// can look for where credentials must never be.
//
// New ties a broker to a test; Start makes one for other uses. All methods
// are safe for concurrent use.
package fakebroker
