// Package controllertest holds what the finalizer tests of the instance
// and binding controllers share: the journal record a test starts with,
// and the two clients a reconciler reads through (its cache, and the API
// server it reads past the cache with).
package controllertest
