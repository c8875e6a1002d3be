// Package app wires lockstep's webhook binary together: configuration from
// the environment, the controller-runtime manager, the webhook server with
// its handlers, health and readiness checks, metrics and logs. cmd/webhook
// is a thin main around Run; the end-to-end tests call Run in-process.
package app
