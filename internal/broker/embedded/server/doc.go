// Package server is the broker's OSB v2.17 HTTP API: it decodes requests,
// checks the headers every request needs, calls the lifecycle package and
// encodes its answer. It holds no OSB semantics of its own.
//
// Headers: basic authentication (401 when it fails, when a username is
// configured); X-Broker-API-Version is required and must be 2.14 or later
// within major version 2 (412 otherwise); X-Broker-API-Originating-Identity,
// when present, must be "<platform> <base64 JSON object>" (400 otherwise)
// and is recorded on the job; X-Broker-API-Request-Identity is echoed on
// every answer and recorded on the job.
package server
