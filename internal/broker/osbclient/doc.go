// Package osbclient is lockstep's client for the Open Service Broker (OSB) API,
// version 2.17.
//
// It speaks to one broker: it reads the catalog, provisions, updates and
// deprovisions service instances, creates and deletes bindings, reads them
// back, and polls last_operation for asynchronous operations. Every call takes
// a context and a RequestMeta that carries who asked (the originating
// identity, sent as "X-Broker-API-Originating-Identity: kubernetes <base64
// JSON>") and which lockstep operation the request belongs to
// ("X-Broker-API-Request-Identity").
//
// Request and answer bodies are the wire types of package osbapi; the
// catalog comes back as an osbapi.Catalog, a binding as an osbapi.Binding.
// Answers come back as typed results that keep the HTTP status, so that a
// caller can tell a 200 ("already there, identical") from a 201 ("created")
// and a 202 ("accepted, poll the operation"). Refusals come back as
// *HTTPError with the broker's OSB error code and description; a broker that
// cannot be reached gives a *TransportError; an answer that cannot be
// understood gives a *MalformedResponseError. Retryable, NeedsOrphanMitigation
// and the Is* helpers classify them for callers.
//
// The package knows nothing of webhooks or Kubernetes objects. It never puts
// credentials (broker auth, binding credentials) into errors or String()
// output.
package osbclient
