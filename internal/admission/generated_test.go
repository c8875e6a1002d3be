package admission_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGeneratedConfigurationIsUpToDate regenerates the webhook
// configurations and lockstep's ClusterRole from the +kubebuilder:webhook
// and +kubebuilder:rbac markers into a temporary directory, as
// `make generate` does, and compares them with what is committed. Run
// `make generate` when it fails.
func TestGeneratedConfigurationIsUpToDate(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles controller-gen; skipped with -short")
	}
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	out := t.TempDir()
	cmd := exec.Command("go", "tool", "controller-gen",
		"webhook", "rbac:roleName=lockstep,fileName=cluster_role.yaml", "paths=./internal/...",
		"output:webhook:dir="+filepath.Join(out, "webhook"), "output:rbac:dir="+filepath.Join(out, "rbac"))
	cmd.Dir = root
	output, err := cmd.CombinedOutput()
	require.NoError(t, err, "controller-gen: %s", output)

	for generated, committed := range map[string]string{
		filepath.Join(out, "webhook", "manifests.yaml"): filepath.Join(root, "deploy", "webhook", "manifests.yaml"),
		filepath.Join(out, "rbac", "cluster_role.yaml"): filepath.Join(root, "deploy", "rbac", "cluster_role.yaml"),
	} {
		want, err := os.ReadFile(generated)
		require.NoError(t, err)
		got, err := os.ReadFile(committed)
		require.NoError(t, err, "%s is missing: run `make generate`", committed)
		assert.Equal(t, string(want), string(got), "%s is stale: run `make generate` and commit the result", committed)
	}
}
