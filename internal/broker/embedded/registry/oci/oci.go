package oci

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded/bundle"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/registry"
)

// Label is the image config label that holds the bundle manifest.
const Label = "dev.lockstep.bundle.manifest"

// Options configure access to an OCI registry.
type Options struct {
	// Insecure talks plain HTTP.
	Insecure bool
	// Username and Password authenticate when set (basic auth).
	Username string
	Password string
	// ActionsDir holds the action files of bundles, one directory per
	// bundle name; empty allows built-in actions only.
	ActionsDir string
	// MaxBytes bounds the files of one bundle (zero: bundle.DefaultMaxBytes).
	MaxBytes int64
	// Transport replaces the HTTP transport (tests).
	Transport http.RoundTripper
}

// RemoteOptions are the options of a request to the registry: o's
// credentials and transport, one attempt.
func (o Options) RemoteOptions(ctx context.Context) []remote.Option {
	auth := authn.Anonymous
	if o.Username != "" {
		auth = &authn.Basic{Username: o.Username, Password: o.Password}
	}
	opts := []remote.Option{remote.WithContext(ctx), remote.WithAuth(auth),
		// One attempt per fetch: the broker syncs periodically and counts
		// failures itself.
		remote.WithRetryBackoff(remote.Backoff{Steps: 1})}
	if o.Transport != nil {
		opts = append(opts, remote.WithTransport(o.Transport))
	}
	return opts
}

// Repository parses a repository's name; insecure allows plain HTTP.
func Repository(repository string, insecure bool) (name.Repository, error) {
	var nopts []name.Option
	if insecure {
		nopts = append(nopts, name.Insecure)
	}
	repo, err := name.NewRepository(repository, nopts...)
	if err != nil {
		return name.Repository{}, fmt.Errorf("OCI repository %q: %w", repository, err)
	}
	return repo, nil
}

// Registry is an OCI repository of bundle specs.
type Registry struct {
	name string
	repo name.Repository
	opts Options
}

var _ registry.Registry = (*Registry)(nil)

// New returns the registry registryName reading repository (for example
// "127.0.0.1:5000/lockstep/bundles").
func New(registryName, repository string, opts Options) (*Registry, error) {
	repo, err := Repository(repository, opts.Insecure)
	if err != nil {
		return nil, fmt.Errorf("registry %q: %w", registryName, err)
	}
	return &Registry{name: registryName, repo: repo, opts: opts}, nil
}

// Name implements registry.Registry.
func (r *Registry) Name() string { return r.name }

// Fetch implements registry.Registry: it lists the repository's tags and
// reads each image's config. Failing to reach the registry fails the fetch;
// a tag whose content is unusable is a problem of that tag only.
func (r *Registry) Fetch(ctx context.Context) (registry.Listing, error) {
	ropts := r.opts.RemoteOptions(ctx)
	tags, err := remote.List(r.repo, ropts...)
	if err != nil {
		return registry.Listing{}, fmt.Errorf("registry %q: list the tags of %s: %w", r.name, r.repo, err)
	}
	sort.Strings(tags)
	var out registry.Listing
	for _, tag := range tags {
		b, err := r.fetchTag(ropts, tag)
		switch {
		case err == nil:
			b.Source = tag
			out.Bundles = append(out.Bundles, b)
		case unreachable(err):
			return registry.Listing{}, fmt.Errorf("registry %q: read %s:%s: %w", r.name, r.repo, tag, err)
		default:
			out.Problems = append(out.Problems, registry.Problem{Source: tag, Err: fmt.Errorf("registry %q: tag %q: %w", r.name, tag, err)})
		}
	}
	return out, nil
}

func (r *Registry) fetchTag(ropts []remote.Option, tag string) (*bundle.Bundle, error) {
	desc, err := remote.Get(r.repo.Tag(tag), ropts...)
	if err != nil {
		return nil, err
	}
	if desc.MediaType.IsIndex() {
		return nil, errors.New("is an image index; a bundle spec is a single image")
	}
	img, err := desc.Image()
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	raw, ok := cfg.Config.Labels[Label]
	if !ok {
		return nil, fmt.Errorf("the image has no %s label", Label)
	}
	m, err := bundle.ParseManifest([]byte(raw))
	if err != nil {
		return nil, err
	}
	dir := ""
	if r.opts.ActionsDir != "" {
		candidate := filepath.Join(r.opts.ActionsDir, m.Name)
		if info, err := os.Stat(candidate); err == nil && info.IsDir() {
			dir = candidate
		}
	}
	return bundle.FromManifest([]byte(raw), dir, r.opts.MaxBytes)
}

// unreachable tells a registry that could not be read (the fetch fails)
// from a tag with unusable content.
func unreachable(err error) bool {
	var te *transport.Error
	if errors.As(err, &te) {
		return te.StatusCode >= http.StatusInternalServerError || te.StatusCode == http.StatusTooManyRequests ||
			te.StatusCode == http.StatusUnauthorized || te.StatusCode == http.StatusForbidden
	}
	var ue *url.Error
	var ne net.Error
	return errors.As(err, &ue) || errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
