package catalog

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"
)

// ErrNotReady is returned by Wait when a broker's catalog is not loaded
// within the caller's deadline.
var ErrNotReady = errors.New("catalog not ready")

// Fetcher fetches a broker's catalog anew; the reconciler provides it.
type Fetcher func(ctx context.Context, broker string) (*Entry, error)

// Cache holds the latest catalog Entry of every broker. It is safe for
// concurrent use.
type Cache struct {
	mu       sync.RWMutex
	entries  map[string]*Entry
	loaded   map[string]chan struct{} // closed once the broker has an entry
	fetch    Fetcher
	refresh  map[string]time.Time // last refresh per broker
	interval time.Duration
	now      func() time.Time
}

// NewCache returns an empty cache whose Refresh refetches a broker at most
// once per minRefreshInterval.
func NewCache(minRefreshInterval time.Duration) *Cache {
	return &Cache{
		entries:  map[string]*Entry{},
		loaded:   map[string]chan struct{}{},
		refresh:  map[string]time.Time{},
		interval: minRefreshInterval,
		now:      time.Now,
	}
}

// SetFetcher sets how Refresh fetches a catalog.
func (c *Cache) SetFetcher(f Fetcher) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fetch = f
}

// Store makes e the broker's current entry and wakes every Wait for it.
func (c *Cache) Store(e *Entry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries[e.Broker] = e
	ch := c.loadedChan(e.Broker)
	select {
	case <-ch:
	default:
		close(ch)
	}
}

// Forget drops a broker whose ServiceBroker was deleted.
func (c *Cache) Forget(broker string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, broker)
	delete(c.loaded, broker)
	delete(c.refresh, broker)
}

// Get returns the broker's entry without waiting.
func (c *Cache) Get(broker string) (*Entry, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	e, ok := c.entries[broker]
	return e, ok
}

// Brokers returns the names of the brokers with a loaded catalog, sorted.
func (c *Cache) Brokers() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	names := make([]string, 0, len(c.entries))
	for n := range c.entries {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Wait returns the broker's entry, waiting until its first catalog is
// loaded or ctx ends; then it returns an error wrapping ErrNotReady.
func (c *Cache) Wait(ctx context.Context, broker string) (*Entry, error) {
	c.mu.Lock()
	e, ok := c.entries[broker]
	ch := c.loadedChan(broker)
	c.mu.Unlock()
	if ok {
		return e, nil
	}
	select {
	case <-ch:
		if e, ok := c.Get(broker); ok {
			return e, nil
		}
		return nil, fmt.Errorf("broker %q was removed while waiting for its catalog: %w", broker, ErrNotReady)
	case <-ctx.Done():
		return nil, fmt.Errorf("broker %q: %w, retry", broker, ErrNotReady)
	}
}

// Refresh fetches the broker's catalog anew, unless it was refreshed less
// than the minimum interval ago; it returns the current entry either way.
// Admission calls it at most once per request, for a service or plan the
// cached catalog does not know.
func (c *Cache) Refresh(ctx context.Context, broker string) (*Entry, error) {
	c.mu.Lock()
	last, seen := c.refresh[broker]
	fetch := c.fetch
	due := fetch != nil && (!seen || c.now().Sub(last) >= c.interval)
	if due {
		c.refresh[broker] = c.now()
	}
	c.mu.Unlock()
	if due {
		e, err := fetch(ctx, broker)
		if err != nil {
			return nil, fmt.Errorf("refreshing the catalog of broker %q: %w", broker, err)
		}
		c.Store(e)
		return e, nil
	}
	if e, ok := c.Get(broker); ok {
		return e, nil
	}
	return nil, fmt.Errorf("broker %q: %w", broker, ErrNotReady)
}

// loadedChan returns the channel closed when broker is loaded; c.mu must be
// held for writing.
func (c *Cache) loadedChan(broker string) chan struct{} {
	ch, ok := c.loaded[broker]
	if !ok {
		ch = make(chan struct{})
		c.loaded[broker] = ch
	}
	return ch
}
