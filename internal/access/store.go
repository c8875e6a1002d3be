package access

import "sync"

// Store holds the compiled access rules of every broker. It is safe for
// concurrent use.
type Store struct {
	mu    sync.RWMutex
	rules map[string]*Rules
}

// NewStore returns an empty Store.
func NewStore() *Store {
	return &Store{rules: map[string]*Rules{}}
}

// Set makes r the broker's rules.
func (s *Store) Set(broker string, r *Rules) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules[broker] = r
}

// Forget drops a broker whose ServiceBroker was deleted.
func (s *Store) Forget(broker string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.rules, broker)
}

// Get returns the broker's rules; nil (every plan open to every
// namespace) when the broker has none. A nil Store has none.
func (s *Store) Get(broker string) *Rules {
	if s == nil {
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.rules[broker]
}
