package embedded_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/registry"
)

func jsonBody(s string) io.Reader { return strings.NewReader(s) }

// benchBroker serves a broker on the bbolt store with the no-op bundle
// (a manifest without actions: every action is builtin:noop).
func benchBroker(b *testing.B) (*httptest.Server, func(method, path, body string) int) {
	b.Helper()
	br, err := embedded.New(embedded.Config{
		Store: openStore(b), CloseStore: true, WorkDir: b.TempDir(),
		Registries: []registry.Registry{registry.NewLocal("r", registryDir(b), 0)},
		SyncPeriod: -1, SweepPeriod: -1, HeartbeatInterval: -1, BootstrapTimeout: -1,
	})
	require.NoError(b, err)
	br.Sync(context.Background())
	srv := httptest.NewServer(br)
	b.Cleanup(func() {
		srv.Close()
		require.NoError(b, br.Close())
	})
	client := srv.Client()
	do := func(method, path, body string) int {
		req, err := http.NewRequest(method, srv.URL+path, jsonBody(body))
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("X-Broker-API-Version", "2.17")
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	return srv, do
}

// BenchmarkProvisionNoop measures synchronous provisions (201) per second
// over HTTP with a no-op bundle on the bbolt store.
func BenchmarkProvisionNoop(b *testing.B) {
	_, do := benchBroker(b)
	body := `{"service_id":"svc-noop","plan_id":"plan-noop","organization_guid":"org","space_guid":"space","parameters":{"n":1}}`
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if code := do("PUT", fmt.Sprintf("/v2/service_instances/bench-%d", i), body); code != http.StatusCreated {
			b.Fatalf("provision %d answered %d", i, code)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "provisions/s")
}

// BenchmarkBindNoop measures synchronous binds (201) per second over HTTP
// with a no-op bundle on the bbolt store.
func BenchmarkBindNoop(b *testing.B) {
	_, do := benchBroker(b)
	if code := do("PUT", "/v2/service_instances/bench", `{"service_id":"svc-noop","plan_id":"plan-noop","organization_guid":"org","space_guid":"space"}`); code != http.StatusCreated {
		b.Fatalf("provision answered %d", code)
	}
	body := `{"service_id":"svc-noop","plan_id":"plan-noop","parameters":{"n":1}}`
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if code := do("PUT", fmt.Sprintf("/v2/service_instances/bench/service_bindings/b-%d", i), body); code != http.StatusCreated {
			b.Fatalf("bind %d answered %d", i, code)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "binds/s")
}
