// Package ocitest publishes bundle manifests to an OCI registry, as a
// bundle author's build would: for the tests of the OCI registry and the
// embedded broker.
package ocitest

import (
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded/bundle"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/registry/oci"
)

// Publish writes an image whose config carries manifest to repository:tag
// and returns its digest.
func Publish(ctx context.Context, repository, tag string, manifest []byte, opts oci.Options) (string, error) {
	if _, err := bundle.ParseManifest(manifest); err != nil {
		return "", fmt.Errorf("publish %s:%s: %w", repository, tag, err)
	}
	repo, err := oci.Repository(repository, opts.Insecure)
	if err != nil {
		return "", err
	}
	cfg, err := empty.Image.ConfigFile()
	if err != nil {
		return "", err
	}
	cfg = cfg.DeepCopy()
	cfg.Config.Labels = map[string]string{oci.Label: string(manifest)}
	img, err := mutate.ConfigFile(empty.Image, cfg)
	if err != nil {
		return "", fmt.Errorf("publish %s:%s: %w", repository, tag, err)
	}
	if err := remote.Write(repo.Tag(tag), img, opts.RemoteOptions(ctx)...); err != nil {
		return "", fmt.Errorf("publish %s:%s: %w", repository, tag, err)
	}
	d, err := img.Digest()
	if err != nil {
		return "", err
	}
	return d.String(), nil
}

// Unpublish deletes repository:tag.
func Unpublish(ctx context.Context, repository, tag string, opts oci.Options) error {
	repo, err := oci.Repository(repository, opts.Insecure)
	if err != nil {
		return err
	}
	if err := remote.Delete(repo.Tag(tag), opts.RemoteOptions(ctx)...); err != nil {
		return fmt.Errorf("unpublish %s:%s: %w", repository, tag, err)
	}
	return nil
}
