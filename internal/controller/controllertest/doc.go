// Package controllertest holds what the tests of the reconciler of
// broker-backed objects and of its kinds share: a test broker and the
// catalog lockstep sees of it, the fake API server, the journal record a
// test starts with, the two clients a reconciler reads through (its
// cache, and the API server it reads past the cache with), and the
// broker-call protocol over them.
package controllertest
