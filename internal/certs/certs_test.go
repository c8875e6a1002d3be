package certs

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGenerateServesTLSTrustedByCA(t *testing.T) {
	b, err := Generate([]string{"localhost", "127.0.0.1"}, time.Hour)
	require.NoError(t, err)

	pair, err := tls.X509KeyPair(b.Cert, b.Key)
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok"))
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
	srv.StartTLS()
	defer srv.Close()

	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(b.CACert))
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	for _, host := range []string{"127.0.0.1", "localhost"} {
		resp, err := client.Get("https://" + net.JoinHostPort(host, port))
		require.NoError(t, err, host)
		_ = resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode)
	}
}

func TestGenerateNeedsHosts(t *testing.T) {
	_, err := Generate(nil, time.Hour)
	assert.ErrorContains(t, err, "no host names")
}

func TestWriteAndValid(t *testing.T) {
	dir := t.TempDir()
	hosts := []string{"localhost", "127.0.0.1"}
	assert.False(t, Valid(dir, hosts, time.Minute), "empty dir")

	b, err := Generate(hosts, time.Hour)
	require.NoError(t, err)
	require.NoError(t, b.Write(dir))

	assert.True(t, Valid(dir, hosts, time.Minute))
	assert.False(t, Valid(dir, hosts, 2*time.Hour), "expires too soon")
	assert.False(t, Valid(dir, []string{"example.com"}, time.Minute), "host not covered")

	info, err := os.Stat(filepath.Join(dir, KeyFile))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
}
