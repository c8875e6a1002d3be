// Package controllertest holds what the tests of the instance and binding
// controllers share: the journal record a test starts with, the two
// clients a reconciler reads through (its cache, and the API server it
// reads past the cache with), and the broker-call protocol over them.
package controllertest
