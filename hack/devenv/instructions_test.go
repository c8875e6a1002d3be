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
		Root: root, Kubeconfig: "/r/.state/kubeconfig", Assets: "/cache/bin", Logs: "/r/.state/logs", State: "/r/.state",
		APIServer: "https://127.0.0.1:6443", Metrics: 8080, Broker: 8099, Services: []string{"failing", "quick"},
	}))
	for _, want := range []string{
		"export KUBECONFIG=/r/.state/kubeconfig\n",
		"export PATH=/cache/bin:$PATH\n",
		"kubectl apply -f examples/instance.yaml\n",
		"from " + root + ":",
		`ServiceBroker "embedded" at http://127.0.0.1:8099, services: failing, quick`,
		"http://127.0.0.1:8080/metrics",
		"controllers      namespace, garbage collector (kube-controller-manager)",
		"Ctrl-C here stops everything",
	} {
		assert.Contains(t, out.String(), want)
	}
}

func TestInstructionsNeverNameAMissingFile(t *testing.T) {
	var out strings.Builder
	err := printNext(&out, instructions{Root: t.TempDir()})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "examples/instance.yaml is missing")
}
