package registry

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded/bundle"
)

// Local is a directory whose sub-directories holding a bundle.json are
// bundles.
type Local struct {
	name     string
	dir      string
	maxBytes int64
}

// NewLocal returns a local registry; maxBytes bounds one bundle (zero:
// bundle.DefaultMaxBytes).
func NewLocal(name, dir string, maxBytes int64) *Local {
	return &Local{name: name, dir: dir, maxBytes: maxBytes}
}

// Name implements Registry.
func (l *Local) Name() string { return l.name }

// Fetch implements Registry. A missing or unreadable directory is a failed
// fetch.
func (l *Local) Fetch(ctx context.Context) (Listing, error) {
	if err := ctx.Err(); err != nil {
		return Listing{}, err
	}
	entries, err := os.ReadDir(l.dir)
	if err != nil {
		return Listing{}, fmt.Errorf("registry %q: read directory %s: %w", l.name, l.dir, err)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	var out Listing
	for _, e := range entries {
		if !e.IsDir() || e.Name()[0] == '.' {
			continue
		}
		dir := filepath.Join(l.dir, e.Name())
		if _, err := os.Stat(filepath.Join(dir, bundle.ManifestFile)); errors.Is(err, os.ErrNotExist) {
			continue
		}
		b, err := bundle.LoadDir(dir, l.maxBytes)
		if err != nil {
			out.Problems = append(out.Problems, Problem{Source: e.Name(), Err: fmt.Errorf("registry %q: %w", l.name, err)})
			continue
		}
		b.Source = e.Name()
		out.Bundles = append(out.Bundles, b)
	}
	return out, nil
}
