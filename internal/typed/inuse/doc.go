// Package inuse finds the objects of a typed kind: what keeps its CRD
// (deactivating its service is refused, and the CRD stays, while one
// exists) and what they hold in spec.parameters (a property they set
// stays in the kind's schema). It reads the API server
// directly, as unstructured objects: a typed kind is not in any scheme,
// and no cache watches it.
package inuse
