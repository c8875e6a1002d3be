package resync

import (
	"math/rand/v2"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Schedule remembers when each object is due for its next fetch. It lives
// in memory: after a restart, or when another replica takes the lead, each
// object is first fetched at a random point of one interval, so that
// thousands of objects are spread over it instead of fetched at once.
type Schedule struct {
	mu   sync.Mutex
	when map[types.NamespacedName]time.Time
}

// Due returns how long until key is due; 0 when it is due now. A key seen
// for the first time is due at a random point of the coming interval.
func (s *Schedule) Due(key types.NamespacedName, now time.Time, interval time.Duration) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.when == nil {
		s.when = map[types.NamespacedName]time.Time{}
	}
	at, ok := s.when[key]
	if !ok {
		at = now.Add(time.Duration(rand.Int64N(int64(interval) + 1)))
		s.when[key] = at
	}
	if wait := at.Sub(now); wait > 0 {
		return wait
	}
	return 0
}

// Next schedules key's next fetch one jittered interval (90% to 100% of
// it) from now, and returns how long that is.
func (s *Schedule) Next(key types.NamespacedName, now time.Time, interval time.Duration) time.Duration {
	wait := interval - time.Duration(rand.Int64N(int64(interval)/10+1))
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.when == nil {
		s.when = map[types.NamespacedName]time.Time{}
	}
	s.when[key] = now.Add(wait)
	return wait
}

// Forget drops a key whose object is gone.
func (s *Schedule) Forget(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.when, key)
}
