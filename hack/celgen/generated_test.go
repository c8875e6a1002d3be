package main

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGeneratedFilesAreUpToDate runs hack/generate.sh, which `make
// generate` runs, into a temporary directory and compares every file it
// writes (deepcopy code, CRDs with their CEL rules, webhook configurations,
// ClusterRole, the Helm chart's copies and templates of them, the
// dashboard and alerting rules) with the committed one; a CRD manifest that nothing
// generates any more is stale too. Run `make generate` when it fails.
func TestGeneratedFilesAreUpToDate(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles controller-gen; skipped with -short")
	}
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	out := t.TempDir()
	cmd := exec.Command("bash", filepath.Join(root, "hack", "generate.sh"), out)
	output, err := cmd.CombinedOutput()
	require.NoError(t, err, "hack/generate.sh: %s", output)

	var generated []string
	require.NoError(t, filepath.WalkDir(out, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(out, path)
		generated = append(generated, rel)
		return err
	}))
	require.NotEmpty(t, generated)
	for _, rel := range generated {
		want, err := os.ReadFile(filepath.Join(out, rel))
		require.NoError(t, err)
		got, err := os.ReadFile(filepath.Join(root, rel))
		if !assert.NoError(t, err, "%s is missing: run `make generate` and commit the result", rel) {
			continue
		}
		assert.Equal(t, string(want), string(got), "%s is stale: run `make generate` and commit the result", rel)
	}
	for _, dir := range []string{"deploy/crds", "charts/lockstep/crds"} {
		committed, err := filepath.Glob(filepath.Join(root, dir, "lockstep.dev_*.yaml"))
		require.NoError(t, err)
		crds, err := filepath.Glob(filepath.Join(out, dir, "*.yaml"))
		require.NoError(t, err)
		assert.Len(t, committed, len(crds), "%s holds a CRD that no type generates any more", dir)
	}
}
