package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded/executor"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/specs"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/store"
)

// Options configure a Runner.
type Options struct {
	Store    store.Store
	Catalog  *specs.Catalog
	Executor executor.Executor
	// Bootstrapped reports whether the broker finished bootstrapping; until
	// then deferred jobs whose spec is unknown keep waiting.
	Bootstrapped func() bool
	// RunnerID names this process in job records; it must be unique.
	RunnerID string
	// Timeout bounds an action when neither the job nor its bundle sets one.
	Timeout time.Duration
	// MaxTimeout, when set, bounds every action, whatever its bundle sets
	// (a spec kept from before the maximum was lowered).
	MaxTimeout time.Duration
	// RunnerTimeout is how old a heartbeat must be for Recover to consider
	// its runner dead (shared stores only).
	RunnerTimeout time.Duration
	// ShutdownGrace is how long Close lets running jobs finish.
	ShutdownGrace time.Duration
	// Reap, when set, ends the processes that a stopped runner of this host
	// left behind (executor.KillRunnerProcesses); Recover calls it before
	// it fails that runner's jobs.
	Reap func(runnerID string) (int, error)
	// MaxConcurrent bounds the actions running at once; zero means 64.
	MaxConcurrent int
	// Clock reads the time of job records and heartbeats; the real
	// clock when nil.
	Clock  clock.PassiveClock
	Logger *slog.Logger
}

// Outcome is the end of one job.
type Outcome struct {
	// Job is the final job record.
	Job store.Job
	// Output is what the action returned (credentials of a bind, the
	// dashboard URL of a provision). Never log it.
	Output executor.Output
}

// Succeeded reports whether the job succeeded.
func (o Outcome) Succeeded() bool { return o.Job.State == store.JobSucceeded }

// Runner executes jobs.
type Runner struct {
	opts   Options
	ctx    context.Context // jobs run under it; cancelled when Close gives up waiting
	cancel context.CancelFunc
	sem    chan struct{}
	wg     sync.WaitGroup

	mu     sync.Mutex
	closed bool
	// running are the jobs running in this process, by token.
	running map[string]*running
}

// running is a job running in this process.
type running struct {
	// sofar reads what its action wrote to its output so far (nil before
	// the action started).
	sofar func() executor.Output
	// accepted is set once the job was answered 202 while its action ran,
	// with the dashboard URL that answer carried.
	accepted     bool
	dashboardURL string
}

// New returns a runner; it runs nothing until asked.
func New(opts Options) *Runner {
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Minute
	}
	if opts.RunnerTimeout <= 0 {
		opts.RunnerTimeout = time.Minute
	}
	if opts.MaxConcurrent <= 0 {
		opts.MaxConcurrent = 64
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Bootstrapped == nil {
		opts.Bootstrapped = func() bool { return true }
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Runner{opts: opts, ctx: ctx, cancel: cancel, sem: make(chan struct{}, opts.MaxConcurrent), running: map[string]*running{}}
}

// ID is the runner id written on the jobs this runner claims.
func (r *Runner) ID() string { return r.opts.RunnerID }

// Run executes a job this runner already claimed and delivers its outcome
// once on the returned channel.
func (r *Runner) Run(token string) <-chan Outcome {
	ch := make(chan Outcome, 1)
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		ch <- r.failUnstarted(token, "the broker is shutting down; the operation was not started: retry it")
		close(ch)
		return ch
	}
	if _, ok := r.running[token]; ok {
		r.mu.Unlock()
		close(ch)
		return ch
	}
	r.running[token] = &running{}
	r.wg.Add(1)
	r.mu.Unlock()
	go func() {
		defer r.wg.Done()
		defer func() {
			r.mu.Lock()
			delete(r.running, token)
			r.mu.Unlock()
		}()
		ch <- r.execute(token)
		close(ch)
	}()
	return ch
}

// Accepted is what the action of job token, running in this process,
// wrote to its output so far (a provision's dashboard URL before it ends),
// for the 202 that answers the job's request; nothing when it is not
// running here or wrote nothing readable yet. The first such answer is
// remembered: a dashboard URL the action returns at its end that the
// answer did not carry is logged as a defect of the bundle.
func (r *Runner) Accepted(token string) executor.Output {
	r.mu.Lock()
	run := r.running[token]
	var sofar func() executor.Output
	if run != nil {
		sofar = run.sofar
	}
	r.mu.Unlock()
	if sofar == nil {
		return executor.Output{} // not started yet: nothing the bundle could have written
	}
	out := sofar()
	r.mu.Lock()
	if !run.accepted {
		run.accepted, run.dashboardURL = true, out.DashboardURL
	}
	r.mu.Unlock()
	return out
}

// checkDashboardURL logs a provision or update, answered 202 while its
// action ran, whose action returned at its end a dashboard URL that the
// 202 did not carry: OSB gives the URL with the first answer, and a
// platform that keeps it never sees a later one (the URL itself is not
// logged).
func (r *Runner) checkDashboardURL(o Outcome) {
	r.mu.Lock()
	var accepted bool
	var url string
	if run := r.running[o.Job.Token]; run != nil {
		accepted, url = run.accepted, run.dashboardURL
	}
	r.mu.Unlock()
	if !accepted || !o.Succeeded() || o.Output.DashboardURL == "" || o.Output.DashboardURL == url {
		return
	}
	answered := "no dashboard_url"
	if url != "" {
		answered = "another dashboard_url"
	}
	r.opts.Logger.Warn("bundle defect: the action wrote its dashboard_url after the broker's first answer (202, at the end of the sync window), which carried "+answered+
		"; a platform that keeps the first answer never sees it: write dashboard_url to the output file first",
		"job", o.Job.Token, "method", o.Job.Method, "instance", o.Job.InstanceID)
}

// started records how to read what the running action of job token wrote.
func (r *Runner) started(token string, sofar func() executor.Output) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if run := r.running[token]; run != nil {
		run.sofar = sofar
	}
}

// Running reports how many jobs run in this process.
func (r *Runner) Running() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.running)
}

// Close stops taking jobs, lets running ones finish for ShutdownGrace, then
// stops their actions, and waits until every job goroutine has returned.
func (r *Runner) Close() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	timer := time.NewTimer(r.opts.ShutdownGrace)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		r.opts.Logger.Warn("jobs still running at shutdown; stopping their actions", "jobs", r.Running())
		r.cancel()
		<-done
	}
	r.cancel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.opts.Store.Update(ctx, func(tx store.Tx) error { return store.DeleteRunner(tx, r.opts.RunnerID) }); err != nil {
		r.opts.Logger.Warn("remove this runner's heartbeat", "error", err)
	}
}

// Heartbeat records that this runner is alive.
func (r *Runner) Heartbeat(ctx context.Context) error {
	host, _ := os.Hostname()
	rec := &store.Runner{ID: r.opts.RunnerID, Host: host, PID: os.Getpid(), Heartbeat: r.opts.Clock.Now()}
	if err := r.opts.Store.Update(ctx, func(tx store.Tx) error { return store.PutRunner(tx, rec) }); err != nil {
		return fmt.Errorf("write runner heartbeat: %w", err)
	}
	return nil
}

// storeCtx is the context of the store writes that record an outcome: they
// must happen even while the runner shuts down.
func storeCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}

// errNotOurs means the job was taken from this runner (Recover elsewhere
// judged it dead); its outcome is not recorded.
var errNotOurs = errors.New("the job is no longer claimed by this runner")
