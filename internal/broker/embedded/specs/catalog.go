package specs

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded/bundle"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/store"
	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
)

// Entry is one known spec.
type Entry struct {
	Spec       *bundle.Spec
	Registry   string
	Marked     bool
	MarkReason string
	MarkedAt   time.Time
}

// Catalog is the in-memory view of the stored specs.
type Catalog struct {
	mu      sync.RWMutex
	entries map[string]Entry
	// compiled caches specs by digest so that a reload does not compile
	// unchanged schemas again.
	compiled map[string]*bundle.Spec
}

// NewCatalog returns an empty catalog; Reload fills it.
func NewCatalog() *Catalog {
	return &Catalog{entries: map[string]Entry{}, compiled: map[string]*bundle.Spec{}}
}

// Reload replaces the view with what the store holds.
func (c *Catalog) Reload(ctx context.Context, st store.Store) error {
	var recs []*store.SpecRecord
	if err := st.View(ctx, func(tx store.Tx) error {
		var err error
		recs, err = store.ListSpecs(tx)
		return err
	}); err != nil {
		return fmt.Errorf("load specs from the store: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	entries := make(map[string]Entry, len(recs))
	compiled := make(map[string]*bundle.Spec, len(recs))
	for _, rec := range recs {
		spec, ok := c.compiled[rec.Digest]
		if !ok {
			var b bundle.Bundle
			if err := json.Unmarshal(rec.Bundle, &b); err != nil {
				return fmt.Errorf("decode stored spec %q: %w", rec.Name, err)
			}
			var err error
			if spec, err = bundle.NewSpec(&b); err != nil {
				return fmt.Errorf("stored spec %q: %w", rec.Name, err)
			}
		}
		compiled[rec.Digest] = spec
		entries[rec.ServiceID] = Entry{Spec: spec, Registry: rec.Registry, Marked: rec.Marked,
			MarkReason: rec.MarkReason, MarkedAt: rec.MarkedAt}
	}
	c.entries, c.compiled = entries, compiled
	return nil
}

// Lookup returns the spec of a service offering, marked or not.
func (c *Catalog) Lookup(serviceID string) (Entry, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	e, ok := c.entries[serviceID]
	return e, ok
}

// Services renders the OSB catalog: every spec that is not marked, by name.
func (c *Catalog) Services() []osbapi.Service {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := []osbapi.Service{}
	for _, e := range c.entries {
		if !e.Marked {
			out = append(out, e.Spec.Catalog())
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Entries returns every spec, marked ones included, by name.
func (c *Catalog) Entries() []Entry {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]Entry, 0, len(c.entries))
	for _, e := range c.entries {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Spec.Name() < out[j].Spec.Name() })
	return out
}
