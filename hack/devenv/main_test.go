package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeRepo makes a directory with what -root and -assets must hold.
func fakeRepo(t *testing.T) (root, assets string) {
	t.Helper()
	root, assets = t.TempDir(), t.TempDir()
	for _, dir := range []string{"deploy/webhook", "deploy/crds", "examples/bundles"} {
		require.NoError(t, os.MkdirAll(filepath.Join(root, dir), 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(root, "deploy/webhook/manifests.yaml"), nil, 0o644))
	for _, b := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kubectl"} {
		require.NoError(t, os.WriteFile(filepath.Join(assets, b), nil, 0o755))
	}
	return root, assets
}

func TestOptionsComplete(t *testing.T) {
	root, assets := fakeRepo(t)
	tests := []struct {
		name    string
		opts    options
		wantErr string
	}{
		{"complete", options{root: root, state: filepath.Join(root, ".state"), assets: assets}, ""},
		{"no assets", options{root: root, state: ".state"}, "hack/testbin.sh"},
		{"assets without kubectl", options{root: root, state: ".state", assets: root}, "etcd is not in"},
		{"not the repository", options{root: assets, state: ".state", assets: assets}, "-root must be the lockstep repository"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.opts.complete()
			if tt.wantErr == "" {
				require.NoError(t, err)
				assert.True(t, filepath.IsAbs(tt.opts.state))
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
}

func TestLockstepConfigManagesAddressesAndTheEmbeddedBroker(t *testing.T) {
	t.Setenv("LOCKSTEP_WEBHOOK_PORT", "1")           // managed: overridden
	t.Setenv("LOCKSTEP_ADMISSION_BUDGET", "7s")      // not managed: kept
	t.Setenv("LOCKSTEP_EMBEDDED_BROKER_NAME", "abc") // managed: overridden
	cfg, err := lockstepConfig(Ports{Webhook: 9443, Broker: 8099, Metrics: 8080, Health: 8081}, "/certs")
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1", cfg.WebhookHost)
	assert.Equal(t, 9443, cfg.WebhookPort)
	assert.Equal(t, "/certs", cfg.CertDir)
	assert.Equal(t, "127.0.0.1:8080", cfg.MetricsAddr)
	assert.False(t, cfg.MetricsSecure, "plain HTTP on loopback, as make run's instructions say")
	assert.Equal(t, "127.0.0.1:8081", cfg.HealthAddr)
	assert.True(t, cfg.EmbeddedBroker)
	assert.Equal(t, "127.0.0.1:8099", cfg.EmbeddedBrokerAddr)
	assert.Equal(t, brokerName, cfg.EmbeddedBrokerName)
	assert.Equal(t, "7s", cfg.AdmissionBudget.String())
}

func TestEmbeddedBrokerServesTheSamplesFromTheState(t *testing.T) {
	env := embeddedEnv(options{root: "/repo"}, newState("/repo/.state"))
	assert.Equal(t, "samples=local:/repo/examples/bundles", env["LOCKSTEP_EMBEDDED_BROKER_REGISTRIES"])
	assert.Equal(t, "/repo/.state/broker/broker.db", env["LOCKSTEP_EMBEDDED_BROKER_BBOLT_PATH"])
	assert.Equal(t, "/repo/.state/broker/work", env["LOCKSTEP_EMBEDDED_BROKER_WORK_DIR"])
}
