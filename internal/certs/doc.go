// Package certs generates a local certificate authority and a serving
// certificate signed by it, for development and tests: `make certs` writes
// them to certs/ so that the webhook can serve TLS on localhost and the API
// server can trust it through the CA bundle. Production clusters use
// cert-manager (deploy/cert-manager) or certificates of their own.
package certs
