// Package registry is where the broker's service specs come from. A
// Registry fetches the complete list of bundles it currently offers, each
// with its source (directory name, image tag), plus the bundles it offers
// that cannot be read (Problem, with their source); the specs package
// reconciles the broker's catalog with that list.
//
// Kinds: local (a directory of bundle directories, this package) and oci
// (an OCI registry repository whose images carry the manifest in a label,
// sub-package oci). Parse reads the broker's registry configuration string.
package registry
