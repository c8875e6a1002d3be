package app

// The metrics server authenticates each client's bearer token with the API
// server (a TokenReview) and asks whether it may get /metrics (a
// SubjectAccessReview); both answers are cached for a while.
//
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

import (
	"crypto/tls"
	"net"

	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// tlsVersions are the values of LOCKSTEP_TLS_MIN_VERSION.
var tlsVersions = map[string]uint16{"1.2": tls.VersionTLS12, "1.3": tls.VersionTLS13}

// TLSOptions are the TLS settings of the webhook and metrics servers: the
// oldest TLS version they accept, and HTTP/1.1 only unless HTTP/2 is
// enabled. controller-runtime offers HTTP/2 by default; an HTTP/2 client
// can open and reset streams faster than a server cancels their work
// (the rapid-reset attacks), and the API server and Prometheus both speak
// HTTP/1.1.
func TLSOptions(c Config) []func(*tls.Config) {
	return []func(*tls.Config){func(t *tls.Config) {
		t.MinVersion = tlsVersions[c.TLSMinVersion]
		if !c.EnableHTTP2 {
			t.NextProtos = []string{"http/1.1"}
		}
	}}
}

// webhookOptions are the webhook server's settings.
func webhookOptions(c Config) webhook.Options {
	return webhook.Options{Host: c.WebhookHost, Port: c.WebhookPort, CertDir: c.CertDir, TLSOpts: TLSOptions(c)}
}

// metricsOptions are the metrics server's settings: HTTPS with the
// webhook's serving certificate (the Service that reaches the webhook
// reaches the metrics too), for clients the API server authenticates and
// authorizes; or plain HTTP on loopback when LOCKSTEP_METRICS_SECURE is
// false.
func metricsOptions(c Config) metricsserver.Options {
	o := metricsserver.Options{BindAddress: c.MetricsAddr}
	if c.MetricsSecure {
		o.SecureServing = true
		o.CertDir = c.CertDir
		o.TLSOpts = TLSOptions(c)
		o.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	return o
}

// loopback reports whether addr (host:port) binds to a loopback address
// only.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
