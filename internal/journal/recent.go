package journal

import "sync"

// recentMemory is how many names a Recent remembers: far more than the
// operations settled while their records are looked at again.
const recentMemory = 4096

// Recent remembers the newest recentMemory names this process saw
// something happen to: the records whose locks it released, the objects
// whose delete it carried out at the broker. Forgetting one only costs a
// read.
type Recent struct {
	mu    sync.Mutex
	names map[string]struct{}
	order []string
}

// NewRecent returns an empty Recent.
func NewRecent() *Recent {
	return &Recent{names: map[string]struct{}{}}
}

func (r *Recent) remember(name string) {
	if r == nil || name == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
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

func (r *Recent) has(name string) bool {
	if r == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.names[name]
	return ok
}

// forget drops name: what was remembered did not happen after all.
func (r *Recent) forget(name string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.names, name) // its place in order goes with the oldest
}
