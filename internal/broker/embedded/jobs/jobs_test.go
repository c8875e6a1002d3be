package jobs_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded/bundle"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/executor"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/jobs"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/specs"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/store"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/store/bboltstore"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// funcExecutor runs a function.
type funcExecutor func(ctx context.Context, inv executor.Invocation) (executor.Result, error)

func (f funcExecutor) Run(ctx context.Context, inv executor.Invocation) (executor.Result, error) {
	return f(ctx, inv)
}

// blockUntilStopped is an action that never ends on its own.
func blockUntilStopped(ctx context.Context, inv executor.Invocation) (executor.Result, error) {
	<-ctx.Done()
	return executor.Result{}, &executor.ActionError{Action: inv.Action, ExitCode: -1, Err: ctx.Err()}
}

// shared makes a store look shared between replicas.
type shared struct{ store.Store }

func (shared) Exclusive() bool { return false }

type env struct {
	store   store.Store
	catalog *specs.Catalog
	now     time.Time
}

func newEnv(t *testing.T) *env {
	t.Helper()
	st, err := bboltstore.Open(filepath.Join(t.TempDir(), "s.db"), bboltstore.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	e := &env{store: st, catalog: specs.NewCatalog(), now: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	b, err := bundle.Assemble(bundle.Manifest{Name: "svc", ID: "svc", Description: "d", Bindable: true,
		Plans: []bundle.Plan{{ID: "plan", Name: "plan", Description: "p",
			Schemas: bundle.Schemas{Create: json.RawMessage(`{"type":"object","properties":{"size":{"minimum":1}}}`)}}}}, nil)
	require.NoError(t, err)
	e.putSpec(t, b, false)
	return e
}

func (e *env) putSpec(t *testing.T, b *bundle.Bundle, marked bool) {
	t.Helper()
	raw, err := json.Marshal(b)
	require.NoError(t, err)
	require.NoError(t, e.store.Update(context.Background(), func(tx store.Tx) error {
		return store.PutSpec(tx, &store.SpecRecord{ServiceID: b.Manifest.ID, Name: b.Manifest.Name, Registry: "r",
			Digest: b.Digest, Bundle: raw, Marked: marked, MarkReason: "removed from registry \"r\""})
	}))
	require.NoError(t, e.catalog.Reload(context.Background(), e.store))
}

func (e *env) runner(t *testing.T, st store.Store, id string, exec executor.Executor, opts ...func(*jobs.Options)) *jobs.Runner {
	t.Helper()
	o := jobs.Options{Store: st, Catalog: e.catalog, Executor: exec, RunnerID: id,
		Timeout: time.Minute, RunnerTimeout: time.Minute, ShutdownGrace: time.Minute,
		Clock: clocktesting.NewFakePassiveClock(e.now)}
	for _, f := range opts {
		f(&o)
	}
	r := jobs.New(o)
	t.Cleanup(r.Close)
	return r
}

// seed writes an instance locked by a job in the given state.
func (e *env) seed(t *testing.T, m store.Method, state store.JobState, runner string, mod ...func(*store.Instance, *store.Job)) string {
	t.Helper()
	token := string(m) + "-" + t.Name()
	inst := &store.Instance{ID: "i1", ServiceID: "svc", PlanID: "plan", State: store.InstanceProvisioned, Job: token, Lock: token,
		Parameters: json.RawMessage(`{"size":1}`)}
	if m == store.Provision {
		inst.State = store.InstanceProvisioning
	}
	j := &store.Job{Token: token, Method: m, InstanceID: "i1", State: state, RunnerID: runner, StartedAt: e.now,
		Request: store.JobRequest{ServiceID: "svc", PlanID: "plan", Parameters: json.RawMessage(`{"size":2}`)}}
	for _, f := range mod {
		f(inst, j)
	}
	require.NoError(t, e.store.Update(context.Background(), func(tx store.Tx) error {
		return errors.Join(store.PutInstance(tx, inst), store.PutJob(tx, j))
	}))
	return token
}

func (e *env) get(t *testing.T, token string) (*store.Job, *store.Instance) {
	t.Helper()
	var j *store.Job
	var in *store.Instance
	require.NoError(t, e.store.View(context.Background(), func(tx store.Tx) error {
		var err error
		if j, err = store.GetJob(tx, token); err != nil && !store.IsNotFound(err) {
			return err
		}
		if in, err = store.GetInstance(tx, "i1"); store.IsNotFound(err) {
			err = nil
		}
		return err
	}))
	return j, in
}

func wait(t *testing.T, ch <-chan jobs.Outcome) jobs.Outcome {
	t.Helper()
	select {
	case o := <-ch:
		return o
	case <-time.After(10 * time.Second):
		t.Fatal("the job never ended")
		return jobs.Outcome{}
	}
}

func TestOutcomes(t *testing.T) {
	ok := funcExecutor(func(_ context.Context, inv executor.Invocation) (executor.Result, error) {
		return executor.Result{Output: executor.Output{DashboardURL: "https://d/x", Description: "all set"},
			StateUpdates: map[string]string{"k": "v"}}, nil
	})
	failing := funcExecutor(func(_ context.Context, inv executor.Invocation) (executor.Result, error) {
		return executor.Result{StateUpdates: map[string]string{"half": "done"}},
			&executor.ActionError{Action: inv.Action, ExitCode: 2, Description: "boom", Err: errors.New("exit status 2")}
	})
	tests := []struct {
		name      string
		method    store.Method
		exec      executor.Executor
		timeout   time.Duration
		wantState store.JobState
		wantDesc  string
		check     func(t *testing.T, j *store.Job, in *store.Instance, state map[string]string)
	}{
		{"provision succeeds", store.Provision, ok, 0, store.JobSucceeded, "all set",
			func(t *testing.T, j *store.Job, in *store.Instance, state map[string]string) {
				assert.Equal(t, store.InstanceProvisioned, in.State)
				assert.Equal(t, "https://d/x", in.DashboardURL)
				assert.Equal(t, map[string]string{"k": "v"}, state)
				assert.True(t, j.ActionRan)
			}},
		{"provision fails; its state is kept for cleanup", store.Provision, failing, 0, store.JobFailed, "provision failed: boom",
			func(t *testing.T, j *store.Job, in *store.Instance, state map[string]string) {
				assert.Equal(t, store.InstanceFailed, in.State)
				assert.Equal(t, map[string]string{"half": "done"}, state)
			}},
		{"update succeeds", store.Update, ok, 0, store.JobSucceeded, "all set",
			func(t *testing.T, j *store.Job, in *store.Instance, state map[string]string) {
				assert.JSONEq(t, `{"size":2}`, string(in.Parameters))
			}},
		{"update fails and changes nothing", store.Update, failing, 0, store.JobFailed, "update failed: boom",
			func(t *testing.T, j *store.Job, in *store.Instance, state map[string]string) {
				assert.JSONEq(t, `{"size":1}`, string(in.Parameters))
				assert.Equal(t, store.InstanceProvisioned, in.State)
			}},
		{"deprovision succeeds and removes everything", store.Deprovision, ok, 0, store.JobSucceeded, "all set",
			func(t *testing.T, j *store.Job, in *store.Instance, state map[string]string) {
				assert.Nil(t, j, "the job goes with its instance")
				assert.Nil(t, in)
				assert.Empty(t, state)
			}},
		{"a timeout stops the action", store.Update, funcExecutor(blockUntilStopped), 20 * time.Millisecond, store.JobFailed, "update timed out after 20ms and was stopped",
			func(t *testing.T, j *store.Job, in *store.Instance, state map[string]string) {
				assert.Empty(t, in.Lock)
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			r := e.runner(t, e.store, "me", tt.exec)
			token := e.seed(t, tt.method, store.JobRunning, "me", func(_ *store.Instance, j *store.Job) { j.Timeout = tt.timeout })
			o := wait(t, r.Run(token))
			assert.Equal(t, tt.wantState, o.Job.State)
			assert.Contains(t, o.Job.Description, tt.wantDesc)
			j, in := e.get(t, token)
			if j != nil {
				assert.Equal(t, tt.wantState, j.State, "recorded")
				assert.Equal(t, o.Job.Description, j.Description)
			}
			if in != nil {
				assert.Empty(t, in.Lock, "the lock is released")
			}
			var state map[string]string
			require.NoError(t, e.store.View(context.Background(), func(tx store.Tx) error {
				var err error
				state, err = store.GetState(tx, "i1")
				return err
			}))
			tt.check(t, j, in, state)
		})
	}
}

// TestTheMaximumTimeoutBoundsASpecsTimeout: a spec kept from before the
// broker's maximum was lowered runs within the new maximum.
func TestTheMaximumTimeoutBoundsASpecsTimeout(t *testing.T) {
	e := newEnv(t)
	b, err := bundle.Assemble(bundle.Manifest{Name: "svc", ID: "svc", Description: "d", Timeout: bundle.Duration(time.Hour),
		Plans: []bundle.Plan{{ID: "plan", Name: "plan", Description: "p"}}}, nil)
	require.NoError(t, err)
	e.putSpec(t, b, false)
	r := e.runner(t, e.store, "me", funcExecutor(blockUntilStopped), func(o *jobs.Options) { o.MaxTimeout = 20 * time.Millisecond })
	o := wait(t, r.Run(e.seed(t, store.Update, store.JobRunning, "me")))
	assert.Equal(t, store.JobFailed, o.Job.State)
	assert.Contains(t, o.Job.Description, "update timed out after 20ms and was stopped")
}

func TestJobOfAnotherRunnerIsNotRun(t *testing.T) {
	e := newEnv(t)
	var ran atomic.Int32
	r := e.runner(t, e.store, "me", funcExecutor(func(context.Context, executor.Invocation) (executor.Result, error) {
		ran.Add(1)
		return executor.Result{}, nil
	}))
	token := e.seed(t, store.Update, store.JobRunning, "someone-else")
	o := wait(t, r.Run(token))
	assert.Equal(t, store.JobRunning, o.Job.State)
	assert.Zero(t, ran.Load())
}

func TestShutdown(t *testing.T) {
	tests := []struct {
		name      string
		grace     time.Duration
		exec      executor.Executor
		wantState store.JobState
		wantDesc  string
		// release, when set, holds the job until Close has been called.
		release chan struct{}
	}{
		{"a job that outlives the grace is stopped", 0, funcExecutor(blockUntilStopped), store.JobFailed, "the broker shut down while the update ran", nil},
		{"a job within the grace finishes", time.Minute, nil, store.JobSucceeded, "update succeeded", make(chan struct{})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			started := make(chan struct{})
			exec := funcExecutor(func(ctx context.Context, inv executor.Invocation) (executor.Result, error) {
				close(started)
				if tt.release != nil {
					<-tt.release
					return executor.Result{}, nil
				}
				return tt.exec.Run(ctx, inv)
			})
			r := e.runner(t, e.store, "me", exec, func(o *jobs.Options) { o.ShutdownGrace = tt.grace })
			token := e.seed(t, store.Update, store.JobRunning, "me")
			ch := r.Run(token)
			<-started
			closed := make(chan struct{})
			go func() { r.Close(); close(closed) }()
			if tt.release != nil {
				// Close has begun once the runner refuses new jobs (a
				// token without a job shows it without running anything).
				require.Eventually(t, func() bool {
					o := <-r.Run("no-such-job")
					return strings.Contains(o.Job.Description, "shutting down")
				}, 10*time.Second, time.Millisecond, "Close stops taking jobs")
				close(tt.release)
			}
			o := wait(t, ch)
			<-closed
			assert.Equal(t, tt.wantState, o.Job.State)
			assert.Contains(t, o.Job.Description, tt.wantDesc)
			j, _ := e.get(t, token)
			assert.Equal(t, tt.wantState, j.State)
		})
	}

	e := newEnv(t)
	r := e.runner(t, e.store, "me", funcExecutor(blockUntilStopped))
	r.Close()
	token := e.seed(t, store.Update, store.JobRunning, "me")
	o := wait(t, r.Run(token))
	assert.Equal(t, store.JobFailed, o.Job.State)
	assert.Contains(t, o.Job.Description, "shutting down; the operation was not started")
}

func TestRecover(t *testing.T) {
	tests := []struct {
		name       string
		exclusive  bool
		runner     *store.Runner // the job runner's heartbeat record, if any
		jobStarted time.Duration // how long before now the job started
		wantFailed bool
	}{
		{"exclusive store: any other runner is gone", true, &store.Runner{ID: "old", Heartbeat: time.Now()}, 0, true},
		{"shared store: a fresh heartbeat is alive", false, &store.Runner{ID: "old"}, 0, false},
		{"shared store: a stale heartbeat is gone", false, &store.Runner{ID: "old"}, 0, true},
		{"shared store: no record yet, recent job", false, nil, 0, false},
		{"shared store: no record, old job", false, nil, 2 * time.Minute, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			st := e.store
			if !tt.exclusive {
				st = shared{e.store}
			}
			if tt.runner != nil {
				tt.runner.Heartbeat = e.now.Add(-10 * time.Second)
				if tt.wantFailed {
					tt.runner.Heartbeat = e.now.Add(-5 * time.Minute)
				}
				require.NoError(t, st.Update(context.Background(), func(tx store.Tx) error { return store.PutRunner(tx, tt.runner) }))
			}
			token := e.seed(t, store.Provision, store.JobRunning, "old", func(_ *store.Instance, j *store.Job) {
				j.StartedAt = e.now.Add(-tt.jobStarted)
			})
			mine := "mine-" + t.Name()
			require.NoError(t, st.Update(context.Background(), func(tx store.Tx) error {
				return store.PutJob(tx, &store.Job{Token: mine, Method: store.Bind, InstanceID: "other", State: store.JobRunning, RunnerID: "me"})
			}))
			r := e.runner(t, st, "me", funcExecutor(blockUntilStopped))
			failed, err := r.Recover(context.Background())
			require.NoError(t, err)
			j, in := e.get(t, token)
			if !tt.wantFailed {
				assert.Empty(t, failed)
				assert.Equal(t, store.JobRunning, j.State)
				return
			}
			assert.Equal(t, []string{token}, failed)
			assert.Equal(t, store.JobFailed, j.State)
			assert.Contains(t, j.Description, "(runner old) stopped before it finished, so its outcome is unknown")
			assert.Contains(t, j.Description, "deprovision the instance to clean up")
			assert.Equal(t, store.InstanceFailed, in.State)
			assert.Empty(t, in.Lock)
			mj, _ := e.get(t, mine)
			assert.Equal(t, store.JobRunning, mj.State, "this runner's own jobs are left alone")
			require.NoError(t, st.View(context.Background(), func(tx store.Tx) error {
				_, err := store.GetRunner(tx, "old")
				assert.True(t, store.IsNotFound(err), "the record of a stopped runner is removed")
				return nil
			}))
		})
	}
}

func TestKick(t *testing.T) {
	tests := []struct {
		name         string
		serviceID    string
		planID       string
		marked       bool
		bootstrapped bool
		wantStarted  bool
		wantState    store.JobState
		wantDesc     string
	}{
		{"known spec: started", "svc", "plan", false, false, true, store.JobSucceeded, "provision succeeded"},
		{"unknown spec while bootstrapping: waits", "nope", "plan", false, false, false, store.JobPending, ""},
		{"unknown spec after bootstrap: fails", "nope", "plan", false, true, false, store.JobFailed, "is not offered by any registry"},
		{"unknown plan after bootstrap: fails", "svc", "nope", false, true, false, store.JobFailed, "is not offered by any registry"},
		{"removed spec after bootstrap: fails", "svc", "plan", true, true, false, store.JobFailed, "was removed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			if tt.marked {
				b, err := bundle.Assemble(bundle.Manifest{Name: "svc", ID: "svc", Description: "d",
					Plans: []bundle.Plan{{ID: "plan", Name: "plan", Description: "p"}}}, nil)
				require.NoError(t, err)
				e.putSpec(t, b, true)
			}
			r := e.runner(t, e.store, "me", funcExecutor(func(context.Context, executor.Invocation) (executor.Result, error) {
				return executor.Result{}, nil
			}), func(o *jobs.Options) { o.Bootstrapped = func() bool { return tt.bootstrapped } })
			token := e.seed(t, store.Provision, store.JobPending, "", func(in *store.Instance, j *store.Job) {
				j.Deferred, j.StartedAt = true, time.Time{}
				j.Request.ServiceID, j.Request.PlanID = tt.serviceID, tt.planID
				in.ServiceID = tt.serviceID
			})
			started, failed, err := r.Kick(context.Background())
			require.NoError(t, err)
			if tt.wantStarted {
				assert.Equal(t, []string{token}, started)
				require.Eventually(t, func() bool { j, _ := e.get(t, token); return j.State == tt.wantState }, 10*time.Second, 5*time.Millisecond)
				j, _ := e.get(t, token)
				assert.Equal(t, "me", j.RunnerID)
				return
			}
			assert.Empty(t, started)
			j, in := e.get(t, token)
			assert.Equal(t, tt.wantState, j.State)
			assert.Contains(t, j.Description, tt.wantDesc)
			if tt.wantState == store.JobFailed {
				assert.Equal(t, []string{token}, failed)
				assert.False(t, j.ActionRan)
				assert.Equal(t, store.InstanceFailed, in.State)
			}
		})
	}
}

func TestMaxConcurrent(t *testing.T) {
	e := newEnv(t)
	var running, peak atomic.Int32
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	r := e.runner(t, e.store, "me", funcExecutor(func(ctx context.Context, inv executor.Invocation) (executor.Result, error) {
		n := running.Add(1)
		defer running.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		<-release
		return executor.Result{}, nil
	}), func(o *jobs.Options) { o.MaxConcurrent = 2 })
	var chans []<-chan jobs.Outcome
	for i := range 4 {
		token := "job-" + string(rune('a'+i))
		require.NoError(t, e.store.Update(context.Background(), func(tx store.Tx) error {
			return errors.Join(
				store.PutInstance(tx, &store.Instance{ID: token, ServiceID: "svc", PlanID: "plan", State: store.InstanceProvisioned, Lock: token, Job: token}),
				store.PutJob(tx, &store.Job{Token: token, Method: store.Update, InstanceID: token, State: store.JobRunning, RunnerID: "me",
					Request: store.JobRequest{ServiceID: "svc", PlanID: "plan"}}))
		}))
		chans = append(chans, r.Run(token))
	}
	require.Eventually(t, func() bool { return running.Load() == 2 }, 10*time.Second, 5*time.Millisecond)
	assert.Equal(t, 4, r.Running(), "four jobs, two of them waiting for a slot")
	once.Do(func() { close(release) })
	for _, ch := range chans {
		assert.Equal(t, store.JobSucceeded, wait(t, ch).Job.State)
	}
	assert.Equal(t, int32(2), peak.Load())
}
