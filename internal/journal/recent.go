package journal

import "sync"

// recentMemory is how many names a Recent remembers: far more than the
// operations settled while their records are looked at again.
const recentMemory = 4096

// Recent remembers the newest recentMemory names this process saw
// something happen to: the records whose locks it released, the objects
// whose delete it carried out at the broker, those whose finalizer it
// removed. Forgetting one only costs a request. The zero Recent is
// empty; a nil one remembers nothing.
type Recent struct {
	mu    sync.Mutex
	names map[string]struct{}
	order []string
}

// NewRecent returns an empty Recent.
func NewRecent() *Recent {
	return &Recent{names: map[string]struct{}{}}
}

// Remember adds name, forgetting the oldest when it holds recentMemory.
func (r *Recent) Remember(name string) {
	if r == nil || name == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.names == nil {
		r.names = map[string]struct{}{}
	}
	if _, ok := r.names[name]; ok {
		return
	}
	if len(r.order) >= recentMemory {
		delete(r.names, r.order[0])
		r.order = r.order[1:]
	}
	r.names[name] = struct{}{}
	r.order = append(r.order, name)
}

// Has reports whether name is remembered.
func (r *Recent) Has(name string) bool {
	if r == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.names[name]
	return ok
}

// Forget drops name: what was remembered did not happen after all.
func (r *Recent) Forget(name string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.names, name) // its place in order goes with the oldest
}
