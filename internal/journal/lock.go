package journal

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// Operation is a broker operation in flight for one object.
type Operation struct {
	// ID is the operation's id, sent as X-Broker-API-Request-Identity.
	ID string
	// Verb is what was asked of the broker.
	Verb v1alpha1.Verb
	// User is who asked.
	User string
	// Started is when the operation began.
	Started time.Time
}

// String describes the operation for a person: verb, user, age, id.
func (o *Operation) String() string {
	return fmt.Sprintf("%s by %q, started %s ago (operation %s)", o.Verb, o.User, time.Since(o.Started).Round(time.Second), o.ID)
}

// Locks allows at most one broker operation in flight per object in this
// process. An operation still running at the broker when admission answers
// keeps its lock while a follower polls it to the end in the background.
// (Across replicas the journal's lock takes over; see DESIGN.md.)
type Locks struct {
	mu   sync.Mutex
	held map[string]*Operation

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// NewLocks returns an empty lock table. Close stops its followers.
func NewLocks() *Locks {
	ctx, cancel := context.WithCancel(context.Background())
	return &Locks{held: map[string]*Operation{}, ctx: ctx, cancel: cancel}
}

// Acquire takes the lock of key for op; when another operation holds it, it
// returns that operation and false.
func (l *Locks) Acquire(key string, op *Operation) (*Operation, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if holder, ok := l.held[key]; ok {
		return holder, false
	}
	l.held[key] = op
	return nil, true
}

// Holder returns the operation holding the lock of key, or nil.
func (l *Locks) Holder(key string) *Operation {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held[key]
}

// Release frees the lock of key if op holds it.
func (l *Locks) Release(key string, op *Operation) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held[key] == op {
		delete(l.held, key)
	}
}

// Follow runs fn in the background with the lock of key still held by op,
// and releases it when fn returns, or earlier when fn calls release. fn's
// context ends when Close is called.
func (l *Locks) Follow(key string, op *Operation, fn func(ctx context.Context, release func())) {
	l.wg.Add(1)
	release := func() { l.Release(key, op) }
	go func() {
		defer l.wg.Done()
		defer release()
		fn(l.ctx, release)
	}()
}

// Close stops every follower and waits for them.
func (l *Locks) Close() {
	l.cancel()
	l.wg.Wait()
}

// Start implements controller-runtime's manager.Runnable: it closes the
// locks when the manager stops.
func (l *Locks) Start(ctx context.Context) error {
	<-ctx.Done()
	l.Close()
	return nil
}
