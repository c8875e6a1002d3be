package embedded_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kelseyhightower/envconfig"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/executor"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/registry"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/store/bboltstore"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const noopManifest = `{"name":"noop","id":"svc-noop","description":"does nothing","bindable":true,
  "plans":[{"id":"plan-noop","name":"default","description":"default"}]}`

func registryDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "noop"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "noop", "bundle.json"), []byte(noopManifest), 0o644))
	return dir
}

func openStore(t testing.TB) *bboltstore.Store {
	t.Helper()
	st, err := bboltstore.Open(filepath.Join(t.TempDir(), "broker.db"), bboltstore.Options{})
	require.NoError(t, err)
	return st
}

func TestNewRejects(t *testing.T) {
	st := openStore(t)
	defer func() { _ = st.Close() }()
	tests := []struct {
		name string
		cfg  embedded.Config
		want string
	}{
		{"no store", embedded.Config{}, "a store is required"},
		{"two registries with one name", embedded.Config{Store: st, Registries: []registry.Registry{
			registry.NewLocal("same", "/a", 0), registry.NewLocal("same", "/b", 0)}}, `two registries are named "same"`},
		{"fewer action users than actions at once", embedded.Config{Store: st, ActionUsers: executor.Users{First: 50000, Count: 8}, MaxConcurrentJobs: 16},
			"the action users 50000-50007 (ACTION_USERS) are 8, fewer than the actions that may run at once (MAX_CONCURRENT_JOBS 16)"},
		{"a default timeout longer than any action may run", embedded.Config{Store: st, JobTimeout: time.Hour, ActionMax: executor.Limits{Time: time.Minute}},
			"the action timeout 1h0m0s (JOB_TIMEOUT) is more than the longest an action may run, 1m0s (ACTION_MAX_TIME)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := embedded.New(tt.cfg)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func healthz(t *testing.T, b *embedded.Broker) map[string]any {
	t.Helper()
	rec := httptest.NewRecorder()
	b.ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	var out map[string]any
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &out))
	return out
}

func TestStartRunsTheLoopsAndCloseStopsThem(t *testing.T) {
	b, err := embedded.New(embedded.Config{
		Store: openStore(t), CloseStore: true, WorkDir: t.TempDir(),
		Registries: []registry.Registry{registry.NewLocal("r", registryDir(t), 0)},
		SyncPeriod: 10 * time.Millisecond, SweepPeriod: 10 * time.Millisecond, HeartbeatInterval: 10 * time.Millisecond,
	})
	require.NoError(t, err)
	assert.Equal(t, false, healthz(t, b)["bootstrapped"])
	require.NoError(t, b.Start(context.Background()))
	require.Error(t, b.Start(context.Background()), "a second Start is refused")
	require.Eventually(t, b.Bootstrapped, 10*time.Second, 5*time.Millisecond, "the sync loop fetches the registry at once")
	assert.Equal(t, true, healthz(t, b)["bootstrapped"])
	assert.Equal(t, b.RunnerID(), healthz(t, b)["runner"])
	require.NoError(t, b.Close())
	require.NoError(t, b.Close(), "Close is idempotent")
	require.Error(t, b.Start(context.Background()), "a closed broker cannot start")
	// goleak (TestMain) checks that every loop goroutine ended.
}

func TestBootstrapTimeoutFailsDeferredProvisions(t *testing.T) {
	b, err := embedded.New(embedded.Config{
		Store: openStore(t), CloseStore: true, WorkDir: t.TempDir(),
		Registries:       []registry.Registry{registry.NewLocal("never", filepath.Join(t.TempDir(), "absent"), 0)},
		FailureThreshold: 1000, SyncPeriod: -1, SweepPeriod: -1, HeartbeatInterval: -1,
		BootstrapTimeout: 20 * time.Millisecond,
	})
	require.NoError(t, err)
	defer func() { require.NoError(t, b.Close()) }()
	srv := httptest.NewServer(b)
	defer srv.Close()
	req, err := http.NewRequest("PUT", srv.URL+"/v2/service_instances/i?accepts_incomplete=true",
		jsonBody(`{"service_id":"svc-noop","plan_id":"plan-noop","organization_guid":"org","space_guid":"space"}`))
	require.NoError(t, err)
	req.Header.Set("X-Broker-API-Version", "2.17")
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusAccepted, resp.StatusCode)

	require.NoError(t, b.Start(context.Background()))
	require.Eventually(t, b.Bootstrapped, 10*time.Second, 5*time.Millisecond, "the bootstrap timeout ends bootstrapping")
	require.Eventually(t, func() bool {
		req, _ := http.NewRequest("GET", srv.URL+"/v2/service_instances/i/last_operation", nil)
		req.Header.Set("X-Broker-API-Version", "2.17")
		resp, err := srv.Client().Do(req)
		if err != nil {
			return false
		}
		defer func() { _ = resp.Body.Close() }()
		var lo map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&lo)
		return lo["state"] == "failed"
	}, 10*time.Second, 5*time.Millisecond)
}

func TestSettings(t *testing.T) {
	tests := []struct {
		env   map[string]string
		check func(t *testing.T, s embedded.Settings)
	}{
		{nil, func(t *testing.T, s embedded.Settings) {
			assert.Equal(t, "bbolt", s.Store)
			assert.Equal(t, "/var/lib/lockstep-broker/broker.db", s.BboltPath)
			assert.Equal(t, time.Minute, s.SyncPeriod)
			assert.Equal(t, 2*time.Second, s.SyncWindow)
			assert.Equal(t, 3, s.FailureThreshold)
			assert.Equal(t, int64(1<<20), s.MaxBundleBytes)
			assert.Empty(t, s.ActionUsers, "actions run as the broker's user unless told")
			assert.Equal(t, "1Gi", s.ActionMaxMemory)
			assert.Equal(t, 10*time.Minute, s.ActionMaxCPU)
			assert.Equal(t, 128, s.ActionMaxProcesses)
			assert.Equal(t, time.Hour, s.ActionMaxTime)
		}},
		{map[string]string{
			"LOCKSTEP_BROKER_STORE": "etcd", "LOCKSTEP_BROKER_ETCD_ENDPOINTS": "http://a:2379,http://b:2379",
			"LOCKSTEP_BROKER_SYNC_WINDOW": "250ms", "LOCKSTEP_BROKER_OCI_INSECURE": "true",
			"LOCKSTEP_BROKER_OCI_ACTIONS_DIR": "/actions", "LOCKSTEP_BROKER_REGISTRIES": "a=local:/x",
			"LOCKSTEP_BROKER_USERNAME": "u", "LOCKSTEP_BROKER_MAX_CONCURRENT_JOBS": "7",
			"LOCKSTEP_BROKER_ACTION_USERS": "50000-50063", "LOCKSTEP_BROKER_ACTION_MAX_MEMORY": "256Mi",
			"LOCKSTEP_BROKER_ACTION_MAX_CPU": "30s", "LOCKSTEP_BROKER_ACTION_MAX_PROCESSES": "16", "LOCKSTEP_BROKER_ACTION_MAX_TIME": "5m",
		}, func(t *testing.T, s embedded.Settings) {
			assert.Equal(t, "50000-50063", s.ActionUsers)
			assert.Equal(t, "256Mi", s.ActionMaxMemory)
			assert.Equal(t, 30*time.Second, s.ActionMaxCPU)
			assert.Equal(t, 16, s.ActionMaxProcesses)
			assert.Equal(t, 5*time.Minute, s.ActionMaxTime)
			assert.Equal(t, "etcd", s.Store)
			assert.Equal(t, []string{"http://a:2379", "http://b:2379"}, s.EtcdEndpoints)
			assert.Equal(t, 250*time.Millisecond, s.SyncWindow)
			assert.True(t, s.OCIInsecure)
			assert.Equal(t, "/actions", s.OCIActionsDir)
			assert.Equal(t, "a=local:/x", s.Registries)
			assert.Equal(t, "u", s.Username)
			assert.Equal(t, 7, s.MaxConcurrentJobs)
		}},
	}
	for i, tt := range tests {
		t.Run(string(rune('a'+i)), func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			var s embedded.Settings
			require.NoError(t, envconfig.Process("LOCKSTEP_BROKER", &s))
			tt.check(t, s)
		})
	}
}

func TestParseRegistries(t *testing.T) {
	tests := []struct {
		spec      string
		wantNames []string
		wantErr   string
	}{
		{"", nil, ""},
		{"samples=local:/srv/bundles, remote=oci:127.0.0.1:5000/lockstep/bundles", []string{"samples", "remote"}, ""},
		{"samples", nil, "want name=kind:location"},
		{"x=ftp:/y", nil, `unknown kind "ftp"`},
		{"x=oci:Not A Repo", nil, `registry "x"`},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			regs, err := embedded.ParseRegistries(tt.spec, embedded.RegistryOptions{})
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			var names []string
			for _, r := range regs {
				names = append(names, r.Name())
			}
			assert.Equal(t, tt.wantNames, names)
		})
	}
}

func TestSettingsOpen(t *testing.T) {
	s := embedded.Settings{Store: "bbolt", BboltPath: filepath.Join(t.TempDir(), "b.db"),
		Registries: "r=local:" + registryDir(t), WorkDir: t.TempDir(),
		SyncPeriod: -1, SweepPeriod: -1, HeartbeatInterval: -1, BootstrapTimeout: -1, SyncWindow: time.Second}
	b, err := s.Open(context.Background(), nil)
	require.NoError(t, err)
	b.Sync(context.Background())
	assert.True(t, b.Bootstrapped())
	require.NoError(t, b.Close())

	for _, tt := range []struct {
		settings embedded.Settings
		want     string
	}{
		{embedded.Settings{Store: "mongo"}, `unknown store "mongo"`},
		{embedded.Settings{ActionUsers: "root"}, `the ACTION_USERS setting: action users "root": want first-last`},
		{embedded.Settings{ActionMaxMemory: "plenty"}, `the ACTION_MAX_MEMORY setting "plenty": want a quantity of bytes such as 512Mi or 1Gi`},
		{embedded.Settings{ActionMaxTime: -time.Second}, "must not be negative"},
	} {
		_, err = tt.settings.Open(context.Background(), nil)
		require.Error(t, err)
		assert.Contains(t, err.Error(), tt.want)
	}
}
