// Package bundle reads service bundles: a manifest (bundle.json: the service
// offering, its plans and their JSON Schemas) plus the executable actions
// that provision, update, deprovision, bind and unbind.
//
// A Bundle is self-contained (manifest and files, with a content digest) so
// that the broker can keep it in its store and still run the actions of an
// instance after the bundle left its registry. A Spec is a Bundle whose
// manifest was validated and whose schemas were compiled; it answers the
// questions the broker asks per request (which plan, is it bindable, are
// these parameters valid, which properties are create-only) and renders the
// OSB catalog entry.
package bundle
