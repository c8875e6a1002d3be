// Package oci is a registry kind that reads bundle specs over the network
// from an OCI registry (Docker distribution API), so that a broker can lose
// its registry for real.
//
// Layout: one repository; every tag is one bundle. The image's config holds
// the bundle manifest (the same JSON as a bundle.json) in the label
// dev.lockstep.bundle.manifest. The image's layers are not used: nothing is
// executed from an image.
//
// What runs: a manifest's actions are either built-ins (builtin:noop,
// builtin:echo), which need nothing else, or paths resolved in a local
// actions directory configured on the broker: <ActionsDir>/<bundle name>/
// holds the files of the bundle named in the manifest, laid out as a local
// bundle directory (conventional actions/<action> files work too). So the
// spec (catalog entry, plans, schemas) travels through the registry while
// the executables are deployed with the broker. Pointing ActionsDir at
// examples/bundles and publishing those bundles' manifests serves the sample
// bundles through OCI. A manifest whose programs cannot be found is reported
// as a problem and left out of the listing.
//
// ocitest publishes such images, for tests.
package oci
