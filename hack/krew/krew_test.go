package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/mod/semver"
	"sigs.k8s.io/krew/pkg/constants"
	"sigs.k8s.io/krew/pkg/index"
	"sigs.k8s.io/yaml"

	"github.com/lockstep-dev/lockstep/internal/plugin"
)

// validate checks a manifest as krew's own validation does (krew keeps it
// internal): API version and kind, a safe name equal to the file's, a
// one-line short description, a semantic version, and every platform with
// an address, a SHA-256, a binary, complete file operations and a selector
// on os and arch only.
func validate(t *testing.T, name string, p index.Plugin) {
	t.Helper()
	assert.Equal(t, constants.CurrentAPIVersion, p.APIVersion)
	assert.Equal(t, constants.PluginKind, p.Kind)
	assert.Regexp(t, `^[\w-]+$`, p.Name)
	assert.Equal(t, name, p.Name, "the manifest is named after its plugin")
	assert.NotEmpty(t, p.Spec.ShortDescription)
	assert.NotContains(t, p.Spec.ShortDescription, "\n")
	assert.True(t, semver.IsValid(p.Spec.Version), "version %q", p.Spec.Version)
	require.NotEmpty(t, p.Spec.Platforms)
	sha := regexp.MustCompile(`^[a-f0-9]{64}$`)
	for _, pl := range p.Spec.Platforms {
		assert.NotEmpty(t, pl.URI)
		assert.Regexp(t, sha, pl.Sha256)
		assert.NotEmpty(t, pl.Bin)
		for _, f := range pl.Files {
			assert.NotEmpty(t, f.From)
			assert.NotEmpty(t, f.To)
		}
		require.NotNil(t, pl.Selector)
		require.NotEmpty(t, pl.Selector.MatchLabels)
		for k := range pl.Selector.MatchLabels {
			assert.Contains(t, []string{"os", "arch"}, k)
		}
	}
}

// standIns packs a stand-in executable for every platform and returns the
// archives and their sums.
func standIns(t *testing.T) (map[platform][]byte, map[platform]string) {
	t.Helper()
	archives, sums := map[platform][]byte{}, map[platform]string{}
	for _, p := range platforms {
		data, err := archive(p, []byte("#!/bin/sh\necho kubectl-lockstep\n"))
		require.NoError(t, err)
		archives[p], sums[p] = data, sha256Of(data)
	}
	return archives, sums
}

// TestManifestIsValid fills plugins/lockstep.yaml for the plugin's version
// as make krew does, reads it into krew's own types (unknown fields are
// errors) and validates it: every platform hack/krew builds is offered
// once, with its archive at the version's release, its SHA-256 and the
// plugin's binary.
func TestManifestIsValid(t *testing.T) {
	tmpl, err := os.ReadFile(filepath.Join("..", "..", "plugins", "lockstep.yaml"))
	require.NoError(t, err)
	_, sums := standIns(t)
	text, err := render(string(tmpl), plugin.Version, sums)
	require.NoError(t, err)
	var p index.Plugin
	require.NoError(t, yaml.UnmarshalStrict(text, &p))
	validate(t, "lockstep", p)
	assert.Equal(t, plugin.Version, p.Spec.Version)
	require.Len(t, p.Spec.Platforms, len(platforms), "the template offers the platforms hack/krew builds")
	for i, want := range platforms {
		got := p.Spec.Platforms[i]
		assert.Equal(t, map[string]string{"os": want.OS, "arch": want.Arch}, got.Selector.MatchLabels)
		assert.Equal(t, release+"/"+plugin.Version+"/"+want.archive(plugin.Version), got.URI)
		assert.Equal(t, sums[want], got.Sha256)
		assert.Equal(t, want.bin(), got.Bin)
		assert.Equal(t, []index.FileOperation{{From: want.bin(), To: "."}}, got.Files)
	}

	delete(sums, platforms[0])
	_, err = render(string(tmpl), plugin.Version, sums)
	assert.ErrorContains(t, err, "no archive for linux/amd64")
}

// TestArchivesHoldThePlugin: each archive holds exactly the manifest's
// binary, executable, and packing again gives the same bytes.
func TestArchivesHoldThePlugin(t *testing.T) {
	archives, _ := standIns(t)
	for _, p := range platforms {
		t.Run(p.OS+"/"+p.Arch, func(t *testing.T) {
			again, err := archive(p, []byte("#!/bin/sh\necho kubectl-lockstep\n"))
			require.NoError(t, err)
			assert.Equal(t, archives[p], again, "archives are reproducible")
			name, mode, content := unpack(t, p, archives[p])
			assert.Equal(t, p.bin(), name)
			assert.Equal(t, os.FileMode(0o755), mode.Perm())
			assert.Equal(t, "#!/bin/sh\necho kubectl-lockstep\n", string(content))
		})
	}
}

// unpack reads the one file of an archive.
func unpack(t *testing.T, p platform, data []byte) (string, os.FileMode, []byte) {
	t.Helper()
	if p.OS == "windows" {
		z, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
		require.NoError(t, err)
		require.Len(t, z.File, 1)
		f, err := z.File[0].Open()
		require.NoError(t, err)
		content, err := io.ReadAll(f)
		require.NoError(t, err)
		return z.File[0].Name, z.File[0].Mode(), content
	}
	gz, err := gzip.NewReader(bytes.NewReader(data))
	require.NoError(t, err)
	tr := tar.NewReader(gz)
	h, err := tr.Next()
	require.NoError(t, err)
	content, err := io.ReadAll(tr)
	require.NoError(t, err)
	_, err = tr.Next()
	require.ErrorIs(t, err, io.EOF, "one file only")
	return h.Name, h.FileInfo().Mode(), content
}
