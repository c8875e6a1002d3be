// Package conformance holds the broker's end-to-end tests: each drives a
// real broker (embedded.New on a real store, real registries) over real HTTP
// with plain net/http, through every OSB endpoint and the status codes the
// specification prescribes, synchronous and asynchronous, plus spec
// reconciliation, bind job state, bundle state and restarts. It has no
// non-test code besides this comment.
package conformance
