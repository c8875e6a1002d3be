package embedded

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded/bundle"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/executor"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/jobs"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/lifecycle"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/server"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/specs"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/store"
)

// Broker is the embedded OSB broker. It is an http.Handler.
type Broker struct {
	cfg        Config
	catalog    *specs.Catalog
	reconciler *specs.Reconciler
	runner     *jobs.Runner
	service    *lifecycle.Service
	metrics    *metrics
	handler    http.Handler

	mu      sync.Mutex
	started bool
	closed  bool
	cancel  context.CancelFunc
	loops   sync.WaitGroup
	// unwatch ends the watch of the actions (executor.Watch).
	unwatch func()
}

// New builds a broker on cfg.Store, loading the specs the store already
// holds. It serves requests at once (provisions of specs not yet known are
// deferred while it bootstraps); Start runs the background loops.
func New(cfg Config) (*Broker, error) {
	if err := cfg.applyDefaults(); err != nil {
		return nil, err
	}
	b := &Broker{cfg: cfg, catalog: specs.NewCatalog(), metrics: newMetrics()}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := b.catalog.Reload(ctx, cfg.Store); err != nil {
		return nil, fmt.Errorf("start the broker: %w", err)
	}
	if cfg.process != nil {
		if err := cfg.process.Prepare(); err != nil {
			return nil, fmt.Errorf("start the broker: %w", err)
		}
		if !cfg.ActionUsers.Enabled() {
			cfg.Logger.Warn("actions run as the broker's own user: they can read its store and environment (set ACTION_USERS)")
		}
		// Before any action can start: they end with this process.
		unwatch, err := executor.Watch(cfg.RunnerID, cfg.ActionUsers)
		if err != nil {
			cfg.Logger.Error("the broker's actions will not end with it if it is killed", "error", err)
		} else {
			b.unwatch = unwatch
		}
	}
	b.reconciler = specs.NewReconciler(specs.Options{
		Store: cfg.Store, Catalog: b.catalog, Registries: cfg.Registries,
		FailureThreshold: cfg.FailureThreshold, Clock: cfg.Clock, Logger: cfg.Logger,
		Check: func(b *bundle.Bundle) error { return cfg.ActionMax.Check(&b.Manifest) },
	})
	b.runner = jobs.New(jobs.Options{
		Store: cfg.Store, Catalog: b.catalog, Executor: cfg.Executor, Bootstrapped: b.reconciler.Bootstrapped,
		RunnerID: cfg.RunnerID, Timeout: cfg.JobTimeout, MaxTimeout: cfg.ActionMax.Time, RunnerTimeout: cfg.RunnerTimeout, Reap: executor.KillRunnerProcesses,
		ShutdownGrace: cfg.ShutdownGrace, MaxConcurrent: cfg.MaxConcurrentJobs, Clock: cfg.Clock, Logger: cfg.Logger,
	})
	// Shared-store peers must see this runner before it claims any job.
	if err := b.runner.Heartbeat(ctx); err != nil {
		if b.unwatch != nil {
			b.unwatch()
		}
		return nil, fmt.Errorf("start the broker: %w", err)
	}
	b.service = lifecycle.New(lifecycle.Options{
		Store: cfg.Store, Catalog: b.catalog, Runner: b.runner, Bootstrapped: b.reconciler.Bootstrapped,
		SyncWindow: cfg.SyncWindow, SyncTimeout: cfg.SyncTimeout, Clock: cfg.Clock, Logger: cfg.Logger,
	})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", b.healthz)
	mux.Handle("GET /metrics", b.metrics.handler())
	mux.Handle("/", server.New(server.Options{
		Service: b.service, Username: cfg.Username, Password: cfg.Password,
		RetryAfter: cfg.RetryAfter, Logger: cfg.Logger,
	}))
	b.handler = mux
	return b, nil
}

// ServeHTTP serves the OSB API under /v2, a health answer at /healthz
// (with the sync status of every registry) and Prometheus metrics at
// /metrics; the last two need no authentication.
func (b *Broker) ServeHTTP(w http.ResponseWriter, r *http.Request) { b.handler.ServeHTTP(w, r) }

func (b *Broker) healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"bootstrapped": b.reconciler.Bootstrapped(),
		"runner":       b.runner.ID(),
		"jobs_running": b.runner.Running(),
		"registries":   b.reconciler.Status(),
	})
}

// Start recovers jobs left by stopped broker processes and resumes deferred
// ones, then runs the background loops until ctx ends or Close is called.
func (b *Broker) Start(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.closed:
		return errors.New("start the broker: it was closed")
	case b.started:
		return errors.New("start the broker: it was started already")
	}
	b.started = true
	if _, err := b.Recover(ctx); err != nil {
		b.cfg.Logger.Error("recover jobs at start", "error", err)
	}
	if _, _, err := b.runner.Kick(ctx); err != nil {
		b.cfg.Logger.Error("resume deferred jobs at start", "error", err)
	}
	loopCtx, cancel := context.WithCancel(ctx)
	b.cancel = cancel
	b.loop(loopCtx, b.cfg.SyncPeriod, true, func(ctx context.Context) { b.Sync(ctx) })
	b.loop(loopCtx, b.cfg.SweepPeriod, false, func(ctx context.Context) {
		if _, err := b.Sweep(ctx); err != nil {
			b.cfg.Logger.Error("sweep marked specs", "error", err)
		}
		if _, err := b.Recover(ctx); err != nil {
			b.cfg.Logger.Error("recover jobs of stopped runners", "error", err)
		}
		if _, err := b.PruneGone(ctx); err != nil {
			b.cfg.Logger.Error("prune gone records", "error", err)
		}
	})
	b.loop(loopCtx, b.cfg.HeartbeatInterval, false, func(ctx context.Context) {
		if err := b.runner.Heartbeat(ctx); err != nil {
			b.cfg.Logger.Error("runner heartbeat", "error", err)
		}
	})
	if b.cfg.BootstrapTimeout > 0 {
		b.loops.Add(1)
		go func() {
			defer b.loops.Done()
			t := time.NewTimer(b.cfg.BootstrapTimeout)
			defer t.Stop()
			select {
			case <-loopCtx.Done():
			case <-t.C:
				if !b.reconciler.Bootstrapped() {
					b.cfg.Logger.Warn("bootstrap timeout: not every registry answered; deferred provisions of unknown specs now fail", "timeout", b.cfg.BootstrapTimeout)
					b.EndBootstrap(loopCtx)
				}
			}
		}()
	}
	return nil
}

// loop runs fn every period (first at once when now is set) until ctx ends;
// a period below zero disables it.
func (b *Broker) loop(ctx context.Context, period time.Duration, now bool, fn func(context.Context)) {
	if period < 0 {
		return
	}
	b.loops.Add(1)
	go func() {
		defer b.loops.Done()
		// The condition never holds: the loop ends when ctx does.
		_ = wait.PollUntilContextCancel(ctx, period, now, func(ctx context.Context) (bool, error) {
			fn(ctx)
			return false, nil
		})
	}()
}

// Sync fetches every registry once, reconciles the specs, and starts (or
// fails) the provisions deferred while bootstrapping.
func (b *Broker) Sync(ctx context.Context) specs.Report {
	rep := b.reconciler.Sync(ctx)
	b.metrics.observe(b.reconciler.Status())
	if _, _, err := b.runner.Kick(ctx); err != nil {
		b.cfg.Logger.Error("start deferred jobs after a sync", "error", err)
	}
	return rep
}

// GoneRetention is how long the broker remembers a deleted instance or
// binding, answering 410 Gone (not 404) to its last_operation: long enough
// for a platform to poll the end of an asynchronous deprovision or unbind.
const GoneRetention = 24 * time.Hour

// PruneGone forgets the instances and bindings deleted more than
// GoneRetention ago (the sweep loop calls it every SweepPeriod) and
// returns how many it forgot.
func (b *Broker) PruneGone(ctx context.Context) (int, error) {
	before := b.cfg.Clock.Now().Add(-GoneRetention)
	n := 0
	err := b.cfg.Store.Update(ctx, func(tx store.Tx) error {
		var err error
		n, err = store.PruneGone(tx, before)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("prune the records of deleted instances and bindings: %w", err)
	}
	return n, nil
}

// Sweep deletes marked specs that no instance uses and returns their ids.
func (b *Broker) Sweep(ctx context.Context) ([]string, error) { return b.reconciler.Sweep(ctx) }

// Recover fails the jobs of broker processes that stopped and returns
// their tokens.
func (b *Broker) Recover(ctx context.Context) ([]string, error) { return b.runner.Recover(ctx) }

// Heartbeat records that this broker process is alive (the heartbeat loop
// calls it every HeartbeatInterval).
func (b *Broker) Heartbeat(ctx context.Context) error { return b.runner.Heartbeat(ctx) }

// Bootstrapped reports whether every registry was heard from.
func (b *Broker) Bootstrapped() bool { return b.reconciler.Bootstrapped() }

// EndBootstrap ends bootstrapping now: deferred provisions whose spec is
// still unknown fail.
func (b *Broker) EndBootstrap(ctx context.Context) {
	b.reconciler.EndBootstrap()
	if _, _, err := b.runner.Kick(ctx); err != nil {
		b.cfg.Logger.Error("settle deferred jobs at the end of bootstrap", "error", err)
	}
}

// RunnerID names this broker process on the jobs it runs.
func (b *Broker) RunnerID() string { return b.runner.ID() }

// Close stops the loops, lets running actions finish for ShutdownGrace
// (then stops them: their jobs fail saying so), waits for every goroutine,
// and closes the store if configured to.
func (b *Broker) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	cancel, unwatch := b.cancel, b.unwatch
	b.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	b.loops.Wait()
	b.runner.Close()
	if unwatch != nil {
		unwatch()
	}
	if b.cfg.CloseStore {
		if err := b.cfg.Store.Close(); err != nil {
			return fmt.Errorf("close the broker store: %w", err)
		}
	}
	return nil
}
