package controllermanager

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestArgs(t *testing.T) {
	assert.Equal(t, []string{
		"--kubeconfig=/s/kubeconfig",
		"--controllers=namespace-controller,garbage-collector-controller,clusterrole-aggregation-controller,validatingadmissionpolicy-status-controller,resourcequota-controller",
		"--use-service-account-credentials=false",
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port=10257",
		"--cert-dir=/s",
	}, Args("/s/kubeconfig", "/s", 10257))
}

// fakeBinary puts a shell script named kube-controller-manager into a new
// assets directory.
func fakeBinary(t *testing.T, script string) string {
	t.Helper()
	assets := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(assets, Binary), []byte("#!/bin/sh\n"+script+"\n"), 0o755))
	return assets
}

func TestStartFailuresSayWhatHappened(t *testing.T) {
	tests := []struct {
		name    string
		assets  func(t *testing.T) string
		wantErr string
	}{
		{"no binary", func(t *testing.T) string { return t.TempDir() }, "kube-controller-manager is not in"},
		{"exits at once", func(t *testing.T) string { return fakeBinary(t, `echo "bad flag" >&2; exit 1`) }, "kube-controller-manager exited while starting (exit status 1)"},
		{"never healthy", func(t *testing.T) string { return fakeBinary(t, `exec sleep 60`) }, "did not report healthy at https://127.0.0.1:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			started := time.Now()
			_, err := start(Options{Assets: tt.assets(t), Dir: dir, StartTimeout: time.Second, StopTimeout: time.Second}, []byte("kubeconfig"))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
			assert.Less(t, time.Since(started), 10*time.Second, "a failed start is stopped, not waited for")
		})
	}
}

func TestStartWritesTheKubeconfigPrivately(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "kcm")
	_, err := start(Options{Assets: fakeBinary(t, "exit 1"), Dir: dir, StartTimeout: time.Second}, []byte("secret"))
	require.Error(t, err)
	info, err := os.Stat(filepath.Join(dir, "kubeconfig"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
}

func TestTheLogGoesToLogFile(t *testing.T) {
	logFile := filepath.Join(t.TempDir(), "kcm.log")
	_, err := start(Options{Assets: fakeBinary(t, `echo "unknown flag: --bad" >&2; exit 1`), Dir: t.TempDir(), LogFile: logFile, StartTimeout: time.Second}, nil)
	require.Error(t, err)
	raw, err := os.ReadFile(logFile)
	require.NoError(t, err)
	assert.Equal(t, "unknown flag: --bad\n", string(raw))
}
