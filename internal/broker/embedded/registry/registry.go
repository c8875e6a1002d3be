package registry

import (
	"context"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded/bundle"
)

// Registry is a source of bundles.
type Registry interface {
	// Name identifies the registry in the broker's configuration and in
	// the specs it provided.
	Name() string
	// Fetch returns every bundle the registry offers now. An error means
	// the registry could not be read at all (nothing is concluded from
	// it); a bundle that cannot be read is reported in Listing.Problems
	// and is absent from the listing.
	Fetch(ctx context.Context) (Listing, error)
}

// Listing is the result of a successful fetch.
type Listing struct {
	// Bundles are the bundles the registry offers; each has its Source set.
	Bundles []*bundle.Bundle
	// Problems are the bundles the registry offers that cannot be read (a
	// manifest with a syntax error, say). They are not removals: the
	// specs they provided stay as they were.
	Problems []Problem
}

// Problem is a bundle that a registry offers but that cannot be read.
type Problem struct {
	// Source is where the registry found it (directory name, image tag),
	// as in bundle.Bundle.Source.
	Source string
	Err    error
}

func (p Problem) Error() string { return p.Err.Error() }

func (p Problem) Unwrap() error { return p.Err }
