package specs

import (
	"sort"
	"time"
)

// RegistryStatus is how the latest sync of one registry went: what the
// broker reports about its catalog sources (health answer, metrics).
type RegistryStatus struct {
	Registry string `json:"registry"`
	// LastSync is when the registry was last synced; zero before the first
	// sync.
	LastSync time.Time `json:"last_sync,omitzero"`
	// ConsecutiveFailures counts failed fetches in a row.
	ConsecutiveFailures int `json:"consecutive_failures"`
	// LastError is the error of the latest fetch, empty when it worked.
	LastError string `json:"last_error,omitempty"`
	// Malformed are the bundles of the latest listing that cannot be read.
	Malformed []MalformedBundle `json:"malformed,omitempty"`
}

// MalformedBundle is a bundle a registry offers that cannot be read.
type MalformedBundle struct {
	// Bundle is where the registry has it (directory name, image tag).
	Bundle string `json:"bundle"`
	Error  string `json:"error"`
}

// Status reports the latest sync of every configured registry, by name.
// It does not wait for a sync in progress.
func (r *Reconciler) Status() []RegistryStatus {
	if s := r.snapshot.Load(); s != nil {
		return *s
	}
	return nil
}

// takeSnapshot records the status of every registry; r.mu is held.
func (r *Reconciler) takeSnapshot() {
	out := make([]RegistryStatus, 0, len(r.status))
	for name, st := range r.status {
		s := RegistryStatus{Registry: name, LastSync: st.lastAt, ConsecutiveFailures: st.failures}
		if st.last != nil {
			if st.last.Err != nil {
				s.LastError = st.last.Err.Error()
			}
			for _, p := range st.last.Malformed {
				s.Malformed = append(s.Malformed, MalformedBundle{Bundle: p.Source, Error: p.Err.Error()})
			}
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Registry < out[j].Registry })
	r.snapshot.Store(&out)
}
