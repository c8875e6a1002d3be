package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	certutil "k8s.io/client-go/util/cert"

	"github.com/lockstep-dev/lockstep/test/framework"
)

// writeCert writes a self-signed serving certificate for 127.0.0.1 to
// dir/tls.crt and dir/tls.key (renamed into place, as the kubelet updates
// a Secret's files) and returns it.
func writeCert(t *testing.T, dir string) []byte {
	t.Helper()
	crt, key, err := certutil.GenerateSelfSignedCertKey("lockstep-embedded-broker.lockstep-system.svc", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	require.NoError(t, err)
	for name, data := range map[string][]byte{"tls.crt": crt, "tls.key": key} {
		tmp := filepath.Join(dir, "."+name)
		require.NoError(t, os.WriteFile(tmp, data, 0o600))
		require.NoError(t, os.Rename(tmp, filepath.Join(dir, name)))
	}
	return crt
}

func trusting(t *testing.T, pem []byte) *http.Client {
	t.Helper()
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(pem))
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
}

// TestServesAsDeployed runs the broker as its Deployment does: HTTPS with
// a certificate from files it reads again when they change, basic auth,
// actions as users of their own. Without credentials nothing but the
// health and metrics answers; an action runs as one of the action users.
func TestServesAsDeployed(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatalf("this test runs actions as users of their own, which needs root (CAP_SETUID, CAP_SETGID); make test runs as root")
	}
	env, _ := brokerEnv(t)
	base := t.TempDir()
	require.NoError(t, os.Chmod(filepath.Dir(base), 0o711))
	require.NoError(t, os.Chmod(base, 0o711))
	certs := filepath.Join(base, "tls")
	require.NoError(t, os.Mkdir(certs, 0o700))
	first := writeCert(t, certs)
	uids := 200000 + rand.IntN(1<<20)*64
	for k, v := range env {
		t.Setenv(k, v)
	}
	reg := filepath.Join(base, "registry", "who")
	require.NoError(t, os.MkdirAll(filepath.Join(reg, "actions"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(reg, "bundle.json"), []byte(`{"name":"who","id":"svc-who","description":"says who runs it",
  "plans":[{"id":"plan-who","name":"default","description":"default"}]}`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(reg, "actions", "provision"),
		[]byte("#!/bin/sh\necho \"{\\\"dashboard_url\\\":\\\"https://who.example/$(id -u)\\\"}\" > \"$LOCKSTEP_OUTPUT_FILE\"\n"), 0o755))
	t.Setenv("LOCKSTEP_BROKER_REGISTRIES", "test=local:"+filepath.Join(base, "registry"))
	t.Setenv("LOCKSTEP_BROKER_WORK_DIR", filepath.Join(base, "work"))
	t.Setenv("LOCKSTEP_BROKER_TLS_CERT_FILE", filepath.Join(certs, "tls.crt"))
	t.Setenv("LOCKSTEP_BROKER_TLS_KEY_FILE", filepath.Join(certs, "tls.key"))
	t.Setenv("LOCKSTEP_BROKER_ACTION_USERS", strconv.Itoa(uids)+"-"+strconv.Itoa(uids+3))
	t.Setenv("LOCKSTEP_BROKER_MAX_CONCURRENT_JOBS", "4")
	t.Setenv("LOCKSTEP_BROKER_SYNC_WINDOW", "30s")

	ctx, cancel := context.WithCancel(context.Background())
	logs := &framework.LogBuffer{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, nil, io.Discard, logs) }()
	defer func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(30 * time.Second):
			t.Fatal("the broker did not stop")
		}
	}()
	url := strings.Replace(address(t, logs), "http://", "https://", 1)
	client := trusting(t, first)

	do := func(method, path, body string, auth bool) (int, map[string]any) {
		req, err := http.NewRequest(method, url+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("X-Broker-API-Version", "2.17")
		if auth {
			req.SetBasicAuth("u", "p")
		}
		resp, err := client.Do(req)
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	code, _ := do("GET", "/v2/catalog", "", false)
	assert.Equal(t, http.StatusUnauthorized, code, "the OSB API needs the credentials")
	code, _ = do("GET", "/healthz", "", false)
	assert.Equal(t, http.StatusOK, code, "the health answer needs none")
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(first))
	conn, err := tls.Dial("tcp", strings.TrimPrefix(url, "https://"), &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}})
	require.NoError(t, err)
	assert.Equal(t, "http/1.1", conn.ConnectionState().NegotiatedProtocol, "HTTP/1.1 only, to a client that offers HTTP/2")
	_ = conn.Close()
	require.Eventually(t, func() bool {
		code, body := do("GET", "/v2/catalog", "", true)
		services, _ := body["services"].([]any)
		return code == http.StatusOK && len(services) == 1
	}, 30*time.Second, 10*time.Millisecond)
	code, body := do("PUT", "/v2/service_instances/i1", `{"service_id":"svc-who","plan_id":"plan-who","organization_guid":"o","space_guid":"s"}`, true)
	require.Equal(t, http.StatusCreated, code, "%v", body)
	uid, err := strconv.Atoi(strings.TrimPrefix(body["dashboard_url"].(string), "https://who.example/"))
	require.NoError(t, err)
	assert.True(t, uid >= uids && uid < uids+4, "the action ran as user %d, one of the action users", uid)
	assert.NotContains(t, logs.String(), "actions run as the broker's own user")

	// A renewed certificate is served without a restart.
	second := writeCert(t, certs)
	renewed := trusting(t, second)
	require.Eventually(t, func() bool {
		resp, err := renewed.Get(url + "/healthz")
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 30*time.Second, 50*time.Millisecond, "the renewed certificate is served")
}
