package suite

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/lockstep-dev/lockstep/test/framework"
)

// supervisor starts lockstep again when it exits while a benchmark runs,
// as a Deployment restarts its pod (lockstep exits when it loses its
// leader lease, say, which an overloaded API server can make it do), and
// keeps its CPU time over every process it ran.
type supervisor struct {
	s        *Suite
	settings []string

	mu sync.Mutex
	// exits are the last log lines of each process that exited.
	exits []string
	// spent is the CPU time of the processes that exited, last the
	// current one's at the last look.
	spent, last time.Duration
}

// look starts lockstep again if it exited, and notes its CPU time.
func (v *supervisor) look(ctx context.Context) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	p := v.s.Env.Lockstep
	if done, _ := p.Exited(); done {
		tail := strings.TrimSpace(p.LogTail(1))
		v.exits = append(v.exits, tail)
		v.spent, v.last = v.spent+v.last, 0
		v.s.Logf("lockstep exited (%s); starting it again, as a Deployment would", tail)
		return v.s.Env.StartLockstep(ctx, v.settings...)
	}
	if cpu, err := p.CPU(); err == nil {
		v.last = cpu
	}
	return nil
}

// watch looks every interval until the returned stop is called.
func (v *supervisor) watch(ctx context.Context, interval time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := v.look(ctx); err != nil && ctx.Err() == nil {
					v.s.Logf("could not start lockstep again: %v", err)
				}
			}
		}
	}()
	return func() { cancel(); <-done }
}

// cpu is lockstep's CPU time over every process so far.
func (v *supervisor) cpu(ctx context.Context) time.Duration {
	_ = v.look(ctx)
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.spent + v.last
}

// memory is the current process's memory (its peak since it started).
func (v *supervisor) memory() (framework.Memory, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.s.Env.Lockstep.Memory()
}

// restarts counts the processes that exited.
func (v *supervisor) restarts() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.exits)
}
