package journal

import "sync"

// releasedMemory is how many released records a Released remembers: far
// more than the operations settled while their records are looked at
// again.
const releasedMemory = 4096

// Released remembers the records whose locks were released, or are being
// released, the newest releasedMemory of them. Forgetting one only costs
// a read of its lock.
type Released struct {
	mu    sync.Mutex
	names map[string]struct{}
	order []string
}

// NewReleased returns an empty Released.
func NewReleased() *Released {
	return &Released{names: map[string]struct{}{}}
}

func (r *Released) remember(record string) {
	if r == nil || record == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.names[record]; ok {
		return
	}
	if len(r.order) >= releasedMemory {
		delete(r.names, r.order[0])
		r.order = r.order[1:]
	}
	r.names[record] = struct{}{}
	r.order = append(r.order, record)
}

func (r *Released) has(record string) bool {
	if r == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.names[record]
	return ok
}

// forget drops record: its release did not happen after all.
func (r *Released) forget(record string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.names, record) // its place in order goes with the oldest
}
