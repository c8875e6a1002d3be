package registry_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded/registry"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
}

func TestLocal(t *testing.T) {
	dir := t.TempDir()
	m := func(name string) string {
		return `{"name":"` + name + `","id":"svc-` + name + `","description":"d","plans":[{"id":"p-` + name + `","name":"p","description":"d"}]}`
	}
	write(t, filepath.Join(dir, "b", "bundle.json"), m("beta"))
	write(t, filepath.Join(dir, "a", "bundle.json"), m("alpha"))
	write(t, filepath.Join(dir, ".hidden", "bundle.json"), m("hidden"))
	write(t, filepath.Join(dir, "not-a-bundle", "README"), "notes")
	write(t, filepath.Join(dir, "broken", "bundle.json"), `{"name":`)
	write(t, filepath.Join(dir, "file.txt"), "x")

	reg := registry.NewLocal("samples", dir, 0)
	assert.Equal(t, "samples", reg.Name())
	listing, err := reg.Fetch(context.Background())
	require.NoError(t, err)
	var names []string
	for _, b := range listing.Bundles {
		names = append(names, b.Manifest.Name)
	}
	assert.Equal(t, []string{"alpha", "beta"}, names, "sorted by directory; hidden and non-bundle directories skipped")
	require.Len(t, listing.Problems, 1)
	assert.Contains(t, listing.Problems[0].Error(), `registry "samples"`)
	assert.Contains(t, listing.Problems[0].Error(), "broken")

	_, err = registry.NewLocal("gone", filepath.Join(dir, "nope"), 0).Fetch(context.Background())
	require.Error(t, err, "a missing directory is a failed fetch")
	assert.Contains(t, err.Error(), `registry "gone"`)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = reg.Fetch(ctx)
	assert.ErrorIs(t, err, context.Canceled)
}
