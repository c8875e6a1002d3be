package v1alpha1_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/validate/celrules"
)

// TestGeneratedFilesAreUpToDate regenerates the deepcopy code and the CRD
// manifests, with the CEL rules hack/celgen adds from the field-policy
// tags, into a temporary directory and compares them with what is
// committed. Run `make generate` when it fails.
func TestGeneratedFilesAreUpToDate(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles controller-gen; skipped with -short")
	}
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	out := t.TempDir()
	cmd := exec.Command("go", "tool", "controller-gen",
		"object", "paths=./api/...", "output:object:dir="+filepath.Join(out, "object"),
		"crd", "paths=./api/...", "output:crd:dir="+filepath.Join(out, "crd"))
	cmd.Dir = root
	output, err := cmd.CombinedOutput()
	require.NoError(t, err, "controller-gen: %s", output)
	scheme := runtime.NewScheme()
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	require.NoError(t, celrules.ApplyDir(filepath.Join(out, "crd"), scheme.AllKnownTypes()), "adding the CEL rules")

	compare := func(generated, committed string) {
		want, err := os.ReadFile(generated)
		require.NoError(t, err)
		got, err := os.ReadFile(committed)
		require.NoError(t, err, "%s is missing: run `make generate`", committed)
		assert.Equal(t, string(want), string(got), "%s is stale: run `make generate` and commit the result", committed)
	}
	compare(filepath.Join(out, "object", "zz_generated.deepcopy.go"), filepath.Join(root, "api", "v1alpha1", "zz_generated.deepcopy.go"))
	crds, err := filepath.Glob(filepath.Join(out, "crd", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, crds)
	for _, crd := range crds {
		compare(crd, filepath.Join(root, "deploy", "crds", filepath.Base(crd)))
	}
	committed, err := filepath.Glob(filepath.Join(root, "deploy", "crds", "lockstep.dev_*.yaml"))
	require.NoError(t, err)
	assert.Len(t, committed, len(crds), "deploy/crds holds a CRD that no type generates any more")
}
