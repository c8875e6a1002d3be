package oci_test

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded/bundle"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/registry/oci"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/registry/oci/ocitest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func manifest(name, id string, actions string) string {
	return `{"name":"` + name + `","id":"` + id + `","description":"d","bindable":true,` + actions +
		`"plans":[{"id":"` + id + `-p","name":"default","description":"d"}]}`
}

// startRegistry runs go-containerregistry's in-process registry and returns
// its repository address.
func startRegistry(t *testing.T) (*httptest.Server, string) {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	return srv, strings.TrimPrefix(srv.URL, "http://") + "/lockstep/bundles"
}

func TestFetch(t *testing.T) {
	ctx := context.Background()
	_, repo := startRegistry(t)
	actions := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(actions, "scripted", "actions"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(actions, "scripted", "actions", "provision"), []byte("#!/bin/sh\n"), 0o755))
	opts := oci.Options{Insecure: true, ActionsDir: actions}

	publish := map[string]string{
		"builtin":  manifest("builtin", "svc-builtin", `"actions":{"bind":"builtin:echo"},`),
		"scripted": manifest("scripted", "svc-scripted", `"actions":{"provision":"actions/provision"},`),
		"missing":  manifest("missing", "svc-missing", `"actions":{"provision":"actions/provision"},`),
	}
	for tag, m := range publish {
		_, err := ocitest.Publish(ctx, repo, tag, []byte(m), opts)
		require.NoError(t, err)
	}
	// An image without the label.
	ref, err := name.NewTag(repo+":unlabelled", name.Insecure)
	require.NoError(t, err)
	require.NoError(t, remote.Write(ref, empty.Image))
	// A label that is not a manifest.
	cfg, err := empty.Image.ConfigFile()
	require.NoError(t, err)
	cfg = cfg.DeepCopy()
	cfg.Config.Labels = map[string]string{oci.Label: `{"name": 3}`}
	img, err := mutate.ConfigFile(empty.Image, cfg)
	require.NoError(t, err)
	ref, err = name.NewTag(repo+":garbled", name.Insecure)
	require.NoError(t, err)
	require.NoError(t, remote.Write(ref, img))

	reg, err := oci.New("remote", repo, opts)
	require.NoError(t, err)
	assert.Equal(t, "remote", reg.Name())
	listing, err := reg.Fetch(ctx)
	require.NoError(t, err)

	var names []string
	for _, b := range listing.Bundles {
		names = append(names, b.Manifest.Name)
	}
	assert.Equal(t, []string{"builtin", "scripted"}, names)
	assert.Equal(t, bundle.Echo, listing.Bundles[0].Actions[bundle.Bind])
	assert.Equal(t, "actions/provision", listing.Bundles[1].Actions[bundle.Provision])
	assert.True(t, listing.Bundles[1].Files["actions/provision"].Executable, "the action files come from the actions directory")

	var problems []string
	for _, p := range listing.Problems {
		problems = append(problems, p.Error())
	}
	require.Len(t, problems, 3)
	assert.Contains(t, problems[0], `tag "garbled"`)
	assert.Contains(t, problems[1], `tag "missing"`)
	assert.Contains(t, problems[1], "is not a file of the bundle")
	assert.Contains(t, problems[2], `tag "unlabelled": the image has no `+oci.Label+" label")

	// A tag deleted from the registry leaves the listing.
	require.NoError(t, ocitest.Unpublish(ctx, repo, "builtin", opts))
	listing, err = reg.Fetch(ctx)
	require.NoError(t, err)
	require.Len(t, listing.Bundles, 1)
	assert.Equal(t, "scripted", listing.Bundles[0].Manifest.Name)
}

func TestFetchFailures(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name    string
		handler func(real http.Handler) http.Handler
		close   bool
		want    string
	}{
		{"registry gone", nil, true, "connection refused"},
		{"server error", func(http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) })
		}, false, "503"},
		{"images unreadable while tags list", func(real http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if strings.Contains(r.URL.Path, "/manifests/") {
					w.WriteHeader(http.StatusBadGateway)
					return
				}
				real.ServeHTTP(w, r)
			})
		}, false, "502"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			real := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
			var h atomic.Value
			h.Store(real)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.Load().(http.Handler).ServeHTTP(w, r) }))
			defer srv.Close()
			repo := strings.TrimPrefix(srv.URL, "http://") + "/lockstep/bundles"
			_, err := ocitest.Publish(ctx, repo, "a", []byte(manifest("a", "svc-a", "")), oci.Options{Insecure: true})
			require.NoError(t, err)
			reg, err := oci.New("remote", repo, oci.Options{Insecure: true})
			require.NoError(t, err)

			if tt.close {
				srv.Close()
			} else {
				h.Store(tt.handler(real))
			}
			_, err = reg.Fetch(ctx)
			require.Error(t, err, "a registry that cannot be read fails the whole fetch, so nothing is concluded from it")
			assert.Contains(t, err.Error(), tt.want)
			assert.Contains(t, err.Error(), `registry "remote"`)
		})
	}
}

func TestBadInput(t *testing.T) {
	_, err := oci.New("r", "UPPER CASE/no", oci.Options{})
	require.Error(t, err)
	_, err = ocitest.Publish(context.Background(), "127.0.0.1:1/x", "t", []byte(`{}`), oci.Options{Insecure: true})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "name is required")
}
