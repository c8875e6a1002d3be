package specs

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded/bundle"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/registry"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/store"
)

// Options configure a Reconciler.
type Options struct {
	Store      store.Store
	Catalog    *Catalog
	Registries []registry.Registry
	// FailureThreshold is how many consecutive failed fetches of a registry
	// mark its unused specs; values below 1 mean 1.
	FailureThreshold int
	// Check, when set, refuses a bundle the broker will not serve (one
	// that asks for more than the broker's maximum): it counts as a bundle
	// that cannot be read (Listing.Problems), with Check's error.
	Check func(*bundle.Bundle) error
	// Clock reads the time of marks and syncs; the real clock when nil.
	Clock  clock.PassiveClock
	Logger *slog.Logger
}

// Reconciler keeps the stored specs in step with the registries.
type Reconciler struct {
	opts         Options
	mu           sync.Mutex // one Sync or Sweep at a time
	status       map[string]*registryStatus
	bootstrapped atomic.Bool
	// snapshot is what Status reports, taken after every Sync.
	snapshot atomic.Pointer[[]RegistryStatus]
}

type registryStatus struct {
	fetched  bool // at least one successful fetch
	failures int  // consecutive failed fetches
	// last is the report of the latest sync of the registry.
	last   *RegistryReport
	lastAt time.Time
}

// RegistryReport is what one Sync did with one registry.
type RegistryReport struct {
	Registry string
	// Err is the failed fetch, nil on success.
	Err error
	// Failures counts consecutive failed fetches.
	Failures int
	Added    []string // service ids added or replaced
	Marked   []string // service ids marked
	Unmarked []string // service ids that came back
	Problems []error  // bundles skipped
	// Malformed are the bundles the registry offers that cannot be read;
	// the specs they provided are kept as they were.
	Malformed []registry.Problem
	// Kept are service ids that the listing lacks but that were not
	// marked, because a bundle that cannot be read may be theirs.
	Kept []string
}

// Report is what one Sync did.
type Report struct {
	Registries []RegistryReport
	// Orphans are service ids marked because their registry is no longer
	// configured.
	Orphans []string
}

// NewReconciler returns a Reconciler; the broker is bootstrapping until
// Sync says otherwise.
func NewReconciler(opts Options) *Reconciler {
	if opts.FailureThreshold < 1 {
		opts.FailureThreshold = 1
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	r := &Reconciler{opts: opts, status: map[string]*registryStatus{}}
	for _, reg := range opts.Registries {
		r.status[reg.Name()] = &registryStatus{}
	}
	if len(opts.Registries) == 0 {
		r.bootstrapped.Store(true)
	}
	r.takeSnapshot()
	return r
}

// Bootstrapped reports whether every registry was heard from (see the
// package documentation).
func (r *Reconciler) Bootstrapped() bool { return r.bootstrapped.Load() }

// EndBootstrap ends bootstrapping whatever the registries did.
func (r *Reconciler) EndBootstrap() { r.bootstrapped.Store(true) }

// Sync fetches every registry once and reconciles, then reloads the catalog.
func (r *Reconciler) Sync(ctx context.Context) Report {
	r.mu.Lock()
	defer r.mu.Unlock()
	var rep Report
	for _, reg := range r.opts.Registries {
		rr := r.syncRegistry(ctx, reg)
		st := r.status[reg.Name()]
		st.last, st.lastAt = &rr, r.opts.Clock.Now()
		rep.Registries = append(rep.Registries, rr)
	}
	rep.Orphans = r.markOrphans(ctx)
	r.takeSnapshot()
	done := true
	for _, st := range r.status {
		if !st.fetched && st.failures < r.opts.FailureThreshold {
			done = false
		}
	}
	if done && !r.bootstrapped.Load() {
		r.bootstrapped.Store(true)
		r.opts.Logger.Info("bootstrap done: every registry was heard from")
	}
	if err := r.opts.Catalog.Reload(ctx, r.opts.Store); err != nil {
		r.opts.Logger.Error("reload the catalog after a registry sync", "error", err)
	}
	return rep
}

func (r *Reconciler) syncRegistry(ctx context.Context, reg registry.Registry) RegistryReport {
	name := reg.Name()
	st := r.status[name]
	rep := RegistryReport{Registry: name}
	listing, err := reg.Fetch(ctx)
	if err != nil {
		st.failures++
		rep.Err, rep.Failures = err, st.failures
		r.opts.Logger.Warn("registry fetch failed; nothing is deleted or marked because of it",
			"registry", name, "consecutive_failures", st.failures, "threshold", r.opts.FailureThreshold, "error", err)
		if st.failures >= r.opts.FailureThreshold {
			reason := fmt.Sprintf("registry %q failed %d consecutive fetches (last error: %v)", name, st.failures, err)
			rep.Marked = r.markUnused(ctx, name, reason)
		}
		return rep
	}
	st.fetched, st.failures = true, 0
	if r.opts.Check != nil {
		bundles := listing.Bundles[:0:0]
		for _, b := range listing.Bundles {
			if err := r.opts.Check(b); err != nil {
				listing.Problems = append(listing.Problems, registry.Problem{Source: b.Source, Err: err})
				continue
			}
			bundles = append(bundles, b)
		}
		listing.Bundles = bundles
	}
	rep.Malformed = listing.Problems
	unreadable := map[string]bool{}
	for _, p := range listing.Problems {
		unreadable[p.Source] = true
		rep.Problems = append(rep.Problems, p)
		r.opts.Logger.Warn("registry offers a bundle that cannot be read; it counts as a failed fetch of that bundle: the spec it provided, if any, stays as it was",
			"registry", name, "bundle", p.Source, "error", p.Err)
	}

	existing, err := r.listSpecs(ctx)
	if err != nil {
		rep.Err = err
		return rep
	}
	seen := map[string]bool{}
	for _, b := range listing.Bundles {
		id := b.Manifest.ID
		if seen[id] {
			rep.Problems = append(rep.Problems, fmt.Errorf("registry %q offers service id %q twice; the second (%q) is skipped", name, id, b.Manifest.Name))
			continue
		}
		if err := r.conflict(existing, name, b); err != nil {
			rep.Problems = append(rep.Problems, err)
			r.opts.Logger.Warn("bundle skipped", "registry", name, "error", err)
			continue
		}
		seen[id] = true
		added, unmarked, err := r.upsert(ctx, name, b)
		switch {
		case err != nil:
			rep.Problems = append(rep.Problems, err)
			r.opts.Logger.Error("store a spec", "registry", name, "service", b.Manifest.Name, "error", err)
		case unmarked:
			rep.Unmarked = append(rep.Unmarked, id)
		case added:
			rep.Added = append(rep.Added, id)
		}
	}
	for _, rec := range existing {
		if rec.Registry != name || rec.Marked || seen[rec.ServiceID] {
			continue
		}
		// A spec recorded without its source may be any unreadable bundle.
		if unreadable[rec.Source] || (rec.Source == "" && len(unreadable) > 0) {
			rep.Kept = append(rep.Kept, rec.ServiceID)
			continue
		}
		reason := fmt.Sprintf("removed from registry %q", name)
		if r.mark(ctx, rec.ServiceID, name, reason) {
			rep.Marked = append(rep.Marked, rec.ServiceID)
		}
	}
	return rep
}

// conflict refuses a bundle whose service id or name another registry's
// live spec already uses.
func (r *Reconciler) conflict(existing []*store.SpecRecord, reg string, b *bundle.Bundle) error {
	if _, err := bundle.NewSpec(b); err != nil {
		return fmt.Errorf("registry %q: %w", reg, err)
	}
	for _, rec := range existing {
		if rec.Marked || rec.Registry == reg {
			continue
		}
		if rec.ServiceID == b.Manifest.ID {
			return fmt.Errorf("registry %q offers service id %q, which registry %q already provides as %q; keeping %q's", reg, b.Manifest.ID, rec.Registry, rec.Name, rec.Registry)
		}
		if rec.Name == b.Manifest.Name {
			return fmt.Errorf("registry %q offers service name %q, which registry %q already uses for service id %q; names must be unique", reg, rec.Name, rec.Registry, rec.ServiceID)
		}
	}
	return nil
}

func (r *Reconciler) listSpecs(ctx context.Context) ([]*store.SpecRecord, error) {
	var recs []*store.SpecRecord
	err := r.opts.Store.View(ctx, func(tx store.Tx) error {
		var err error
		recs, err = store.ListSpecs(tx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list stored specs: %w", err)
	}
	return recs, nil
}

func (r *Reconciler) upsert(ctx context.Context, reg string, b *bundle.Bundle) (added, unmarked bool, err error) {
	raw, err := json.Marshal(b)
	if err != nil {
		return false, false, fmt.Errorf("encode spec %q: %w", b.Manifest.Name, err)
	}
	now := r.opts.Clock.Now()
	err = r.opts.Store.Update(ctx, func(tx store.Tx) error {
		added, unmarked = false, false
		old, err := store.GetSpec(tx, b.Manifest.ID)
		switch {
		case store.IsNotFound(err):
			added = true
		case err != nil:
			return err
		case old.Registry != reg && !old.Marked:
			return fmt.Errorf("service id %q now belongs to registry %q", b.Manifest.ID, old.Registry)
		case old.Digest == b.Digest && old.Registry == reg && !old.Marked && old.Source == b.Source:
			return nil // unchanged
		default:
			unmarked = old.Marked
			added = !old.Marked
		}
		return store.PutSpec(tx, &store.SpecRecord{ServiceID: b.Manifest.ID, Name: b.Manifest.Name,
			Registry: reg, Source: b.Source, Digest: b.Digest, Bundle: raw, UpdatedAt: now})
	})
	if err != nil {
		return false, false, fmt.Errorf("store spec %q: %w", b.Manifest.Name, err)
	}
	if added || unmarked {
		r.opts.Logger.Info("spec stored", "registry", reg, "service", b.Manifest.Name, "service_id", b.Manifest.ID, "came_back", unmarked)
	}
	return added, unmarked, nil
}

// mark marks one spec of a registry; it reports whether it did.
func (r *Reconciler) mark(ctx context.Context, serviceID, reg, reason string) bool {
	now := r.opts.Clock.Now()
	did := false
	err := r.opts.Store.Update(ctx, func(tx store.Tx) error {
		did = false
		rec, err := store.GetSpec(tx, serviceID)
		if store.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if rec.Marked || rec.Registry != reg {
			return nil
		}
		rec.Marked, rec.MarkReason, rec.MarkedAt = true, reason, now
		did = true
		return store.PutSpec(tx, rec)
	})
	if err != nil {
		r.opts.Logger.Error("mark a spec", "service_id", serviceID, "error", err)
		return false
	}
	if did {
		r.opts.Logger.Info("spec marked: hidden from the catalog, no new provisions", "service_id", serviceID, "reason", reason)
	}
	return did
}

// usedServices returns the service ids that instances use.
func (r *Reconciler) usedServices(ctx context.Context) (map[string]bool, error) {
	used := map[string]bool{}
	err := r.opts.Store.View(ctx, func(tx store.Tx) error {
		insts, err := store.ListInstances(tx)
		for _, in := range insts {
			used[in.ServiceID] = true
		}
		return err
	})
	return used, err
}

func (r *Reconciler) markUnused(ctx context.Context, reg, reason string) []string {
	recs, err := r.listSpecs(ctx)
	if err != nil {
		r.opts.Logger.Error("mark unused specs", "registry", reg, "error", err)
		return nil
	}
	used, err := r.usedServices(ctx)
	if err != nil {
		r.opts.Logger.Error("mark unused specs", "registry", reg, "error", err)
		return nil
	}
	var out []string
	for _, rec := range recs {
		if rec.Registry == reg && !rec.Marked && !used[rec.ServiceID] && r.mark(ctx, rec.ServiceID, reg, reason) {
			out = append(out, rec.ServiceID)
		}
	}
	return out
}

// markOrphans marks specs whose registry is no longer configured.
func (r *Reconciler) markOrphans(ctx context.Context) []string {
	recs, err := r.listSpecs(ctx)
	if err != nil {
		r.opts.Logger.Error("mark specs of registries no longer configured", "error", err)
		return nil
	}
	var out []string
	for _, rec := range recs {
		if _, configured := r.status[rec.Registry]; configured || rec.Marked {
			continue
		}
		if r.mark(ctx, rec.ServiceID, rec.Registry, fmt.Sprintf("registry %q is no longer configured", rec.Registry)) {
			out = append(out, rec.ServiceID)
		}
	}
	return out
}

// Sweep deletes marked specs that no instance uses and returns their ids.
func (r *Reconciler) Sweep(ctx context.Context) ([]string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	type candidate struct {
		id, name string
		markedAt time.Time
	}
	var candidates []candidate
	err := r.opts.Store.View(ctx, func(tx store.Tx) error {
		recs, err := store.ListSpecs(tx)
		if err != nil {
			return err
		}
		insts, err := store.ListInstances(tx)
		if err != nil {
			return err
		}
		used := map[string]bool{}
		for _, in := range insts {
			used[in.ServiceID] = true
		}
		for _, rec := range recs {
			if rec.Marked && !used[rec.ServiceID] {
				candidates = append(candidates, candidate{rec.ServiceID, rec.Name, rec.MarkedAt})
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sweep specs: %w", err)
	}
	var deleted []string
	for _, c := range candidates {
		did := false
		err := r.opts.Store.Update(ctx, func(tx store.Tx) error {
			did = false
			m, err := store.GetSpecMark(tx, c.id)
			if store.IsNotFound(err) {
				return nil
			}
			if err != nil {
				return err
			}
			// Marked again since we looked means it was unmarked in
			// between, and may have gained an instance.
			if !m.Marked || !m.MarkedAt.Equal(c.markedAt) {
				return nil
			}
			did = true
			return store.DeleteSpec(tx, c.id)
		})
		if err != nil {
			return deleted, fmt.Errorf("sweep spec %q: %w", c.name, err)
		}
		if did {
			deleted = append(deleted, c.id)
			r.opts.Logger.Info("marked spec deleted: no instance uses it", "service", c.name, "service_id", c.id)
		}
	}
	sort.Strings(deleted)
	if err := r.opts.Catalog.Reload(ctx, r.opts.Store); err != nil {
		return deleted, err
	}
	return deleted, nil
}
