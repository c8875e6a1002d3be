package registry

import (
	"context"

	"github.com/lockstep-dev/lockstep/internal/osb/bundle"
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
	Bundles  []*bundle.Bundle
	Problems []error
}
