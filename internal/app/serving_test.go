package app_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/lockstep-dev/lockstep/internal/app"
	"github.com/lockstep-dev/lockstep/internal/certs"
	"github.com/lockstep-dev/lockstep/test/framework"
)

// serve starts the webhook and metrics servers as lockstep configures
// them from the environment, with a certificate for 127.0.0.1, and
// returns their addresses and the CA that signed the certificate.
func serve(t *testing.T, env map[string]string) (webhookAddr, metricsAddr string, ca *x509.CertPool) {
	t.Helper()
	dir := t.TempDir()
	b, err := certs.Generate([]string{"127.0.0.1"}, time.Hour)
	require.NoError(t, err)
	require.NoError(t, b.Write(dir))
	ca = x509.NewCertPool()
	require.True(t, ca.AppendCertsFromPEM(b.CACert))

	webhookPort, err := framework.FreePort()
	require.NoError(t, err)
	metricsPort, err := framework.FreePortExcept(map[int]bool{webhookPort: true})
	require.NoError(t, err)
	t.Setenv("LOCKSTEP_WEBHOOK_HOST", "127.0.0.1")
	t.Setenv("LOCKSTEP_WEBHOOK_PORT", strconv.Itoa(webhookPort))
	t.Setenv("LOCKSTEP_METRICS_ADDR", "127.0.0.1:"+strconv.Itoa(metricsPort))
	t.Setenv("LOCKSTEP_CERT_DIR", dir)
	for k, v := range env {
		t.Setenv(k, v)
	}
	cfg, err := app.LoadConfig()
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	wh := webhook.NewServer(app.WebhookOptions(cfg))
	// The metrics filter asks the API server only about a request with a
	// token: none here.
	ms, err := metricsserver.NewServer(app.MetricsOptions(cfg), &rest.Config{Host: "https://127.0.0.1:1"}, http.DefaultClient)
	require.NoError(t, err)
	for _, s := range []interface{ Start(context.Context) error }{wh, ms} {
		go func() { _ = s.Start(ctx) }()
	}
	webhookAddr, metricsAddr = cfg.WebhookHost+":"+strconv.Itoa(cfg.WebhookPort), cfg.MetricsAddr
	for _, addr := range []string{webhookAddr, metricsAddr} {
		require.Eventually(t, func() bool {
			c, err := net.Dial("tcp", addr)
			if err == nil {
				_ = c.Close()
			}
			return err == nil
		}, 30*time.Second, 20*time.Millisecond, "%s serves", addr)
	}
	return webhookAddr, metricsAddr, ca
}

// handshake makes a TLS handshake with addr offering HTTP/2 and
// HTTP/1.1, with TLS versions up to maxVersion, and returns the protocol
// the server chose.
func handshake(addr string, ca *x509.CertPool, maxVersion uint16) (string, error) {
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", addr,
		&tls.Config{RootCAs: ca, ServerName: "127.0.0.1", NextProtos: []string{"h2", "http/1.1"}, MaxVersion: maxVersion})
	if err != nil {
		return "", err
	}
	defer func() { _ = conn.Close() }()
	return conn.ConnectionState().NegotiatedProtocol, nil
}

// TestServingSettings: the webhook and metrics servers speak HTTP/1.1
// only unless HTTP/2 is enabled, accept TLS from the configured minimum
// version, and the metrics server answers a request without a token
// with 401.
func TestServingSettings(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		// protocol is what a client offering h2 and http/1.1 gets.
		protocol string
		// tls12 says whether a client of TLS 1.2 at most is served.
		tls12 bool
	}{
		{"defaults: HTTP/1.1 only, TLS 1.2 and later", nil, "http/1.1", true},
		{"HTTP/2 enabled", map[string]string{"LOCKSTEP_ENABLE_HTTP2": "true"}, "h2", true},
		{"TLS 1.3 at least", map[string]string{"LOCKSTEP_TLS_MIN_VERSION": "1.3"}, "http/1.1", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			webhookAddr, metricsAddr, ca := serve(t, tt.env)
			for server, addr := range map[string]string{"webhook": webhookAddr, "metrics": metricsAddr} {
				got, err := handshake(addr, ca, tls.VersionTLS13)
				require.NoError(t, err, server)
				assert.Equal(t, tt.protocol, got, "%s server's protocol", server)
				_, err = handshake(addr, ca, tls.VersionTLS12)
				if tt.tls12 {
					assert.NoError(t, err, "%s server with TLS 1.2", server)
				} else {
					assert.ErrorContains(t, err, "protocol version", "%s server refuses TLS 1.2", server)
				}
			}
			client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca}}}
			resp, err := client.Get("https://" + metricsAddr + "/metrics")
			require.NoError(t, err)
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "metrics without a token: %s", body)
		})
	}
}

// TestPlainMetricsOnLoopbackOnly: LOCKSTEP_METRICS_SECURE=false serves
// plain HTTP to anyone, so only on a loopback address.
func TestPlainMetricsOnLoopbackOnly(t *testing.T) {
	for addr, ok := range map[string]bool{"127.0.0.1:8080": true, "localhost:8080": true, "[::1]:8080": true, "0": true,
		":8080": false, "0.0.0.0:8080": false, "10.0.0.7:8080": false} {
		t.Run(addr, func(t *testing.T) {
			t.Setenv("LOCKSTEP_METRICS_SECURE", "false")
			t.Setenv("LOCKSTEP_METRICS_ADDR", addr)
			_, err := app.LoadConfig()
			if ok {
				assert.NoError(t, err)
			} else {
				assert.ErrorContains(t, err, "plain HTTP without authentication is served only on a loopback address")
			}
		})
	}
}
