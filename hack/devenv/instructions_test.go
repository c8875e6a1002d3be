package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestInstructionsSayWhatToTypeNext(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "examples"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "examples", "instance.yaml"), nil, 0o644))
	var out strings.Builder
	require.NoError(t, printNext(&out, instructions{
		Root: root, Kubeconfig: filepath.Join(root, ".state", "kubeconfig"), Assets: "/cache/bin",
		Logs: filepath.Join(root, ".state", "logs"), State: filepath.Join(root, ".state"),
		APIServer: "https://127.0.0.1:6443", Metrics: 8080, Broker: 8099, Services: []string{"failing", "quick"},
	}))
	for _, want := range []string{
		"export KUBECONFIG=$PWD/.state/kubeconfig\n",
		"export PATH=/cache/bin:$PATH\n",
		"kubectl apply -f examples/instance.yaml\n",
		"In another terminal, at the repository root:",
		"logs             .state/logs/\n",
		`ServiceBroker "embedded" at http://127.0.0.1:8099, services: failing, quick`,
		"http://127.0.0.1:8080/metrics",
		"controllers      namespace, garbage collector, ClusterRole aggregation (kube-controller-manager)",
		"Ctrl-C here stops everything",
	} {
		assert.Contains(t, out.String(), want)
	}
}

func TestInstructionsNameNoPathOfTheMachine(t *testing.T) {
	home, err := os.UserHomeDir()
	require.NoError(t, err)
	root := "/src/lockstep"
	tests := []struct {
		name, path, shown, typed string
	}{
		{name: "inside the repository", path: "/src/lockstep/.state/kubeconfig", shown: ".state/kubeconfig", typed: "$PWD/.state/kubeconfig"},
		{name: "in the home directory", path: filepath.Join(home, ".cache", "lockstep", "bin"), shown: "~/.cache/lockstep/bin", typed: "$HOME/.cache/lockstep/bin"},
		{name: "elsewhere", path: "/opt/testbin", shown: "/opt/testbin", typed: "/opt/testbin"},
		{name: "beside the repository", path: "/src/lockstep-other/x", shown: "/src/lockstep-other/x", typed: "/src/lockstep-other/x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.shown, shown(root, tt.path))
			assert.Equal(t, tt.typed, typed(root, tt.path))
		})
	}
}

func TestInstructionsNeverNameAMissingFile(t *testing.T) {
	var out strings.Builder
	err := printNext(&out, instructions{Root: t.TempDir()})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "examples/instance.yaml is missing")
}
