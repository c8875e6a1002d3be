package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"k8s.io/utils/clock"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded/jobs"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/specs"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/store"
	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
)

// Options configure a Service.
type Options struct {
	Store   store.Store
	Catalog *specs.Catalog
	Runner  *jobs.Runner
	// Bootstrapped reports whether the broker has heard from every registry.
	Bootstrapped func() bool
	// SyncWindow is how long a request with accepts_incomplete=true waits
	// for its job before answering 202.
	SyncWindow time.Duration
	// SyncTimeout bounds the action of a request without
	// accepts_incomplete (it is answered only when the action ends).
	SyncTimeout time.Duration
	// Clock stamps the jobs; nil means the real clock.
	Clock  clock.PassiveClock
	Logger *slog.Logger
}

// Service carries out OSB operations.
type Service struct {
	opts Options
}

// New returns a Service.
func New(opts Options) *Service {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Bootstrapped == nil {
		opts.Bootstrapped = func() bool { return true }
	}
	if opts.SyncTimeout <= 0 {
		opts.SyncTimeout = time.Minute
	}
	return &Service{opts: opts}
}

// Catalog lists the service offerings that accept provisions.
func (s *Service) Catalog() []osbapi.Service { return s.opts.Catalog.Services() }

func newToken(m store.Method) string { return string(m) + "-" + uuid.NewString() }

// newJob returns a job claimed by this process's runner.
func (s *Service) newJob(m store.Method, instanceID, bindingID string, c Common, req store.JobRequest) *store.Job {
	now := s.opts.Clock.Now()
	j := &store.Job{
		Token: newToken(m), Method: m, InstanceID: instanceID, BindingID: bindingID,
		State: store.JobRunning, RunnerID: s.opts.Runner.ID(), Request: req,
		Identity: c.Identity, RequestID: c.RequestID, CreatedAt: now, StartedAt: now,
	}
	if !c.AcceptsIncomplete {
		j.Timeout = s.opts.SyncTimeout
	}
	return j
}

// await waits for a job as the request allows: up to SyncWindow with
// accepts_incomplete, until it ends without.
func (s *Service) await(ctx context.Context, ch <-chan jobs.Outcome, acceptsIncomplete bool) (jobs.Outcome, bool) {
	var window <-chan time.Time
	if acceptsIncomplete {
		if s.opts.SyncWindow <= 0 {
			return jobs.Outcome{}, false // answer 202 at once
		}
		t := time.NewTimer(s.opts.SyncWindow)
		defer t.Stop()
		window = t.C
	}
	select {
	case o, ok := <-ch:
		return o, ok
	case <-window:
		return jobs.Outcome{}, false
	case <-ctx.Done():
		return jobs.Outcome{}, false
	}
}

// answer runs a created job and turns its end into the answer.
func (s *Service) answer(ctx context.Context, job *store.Job, c Common, success Status) (Result, error) {
	ch := s.opts.Runner.Run(job.Token)
	o, done := s.await(ctx, ch, c.AcceptsIncomplete)
	if !done {
		if !c.AcceptsIncomplete {
			return Result{}, internal("the request ended before the %s finished; it goes on as operation %s", job.Method, job.Token)
		}
		res := Result{Status: Accepted, Operation: job.Token}
		if job.Method == store.Provision || job.Method == store.Update {
			// OSB: the dashboard URL belongs in the first answer; the
			// action may have written it already.
			res.DashboardURL = s.opts.Runner.Accepted(job.Token).DashboardURL
		}
		return res, nil
	}
	if o.Job.Refused {
		return Result{}, s.refused(ctx, &o.Job)
	}
	if !o.Succeeded() {
		return Result{}, errorf(Internal, CodeActionFailed, "%s", o.Job.Description)
	}
	res := Result{Status: success, DashboardURL: o.Output.DashboardURL}
	if job.Method == store.Bind {
		res.Credentials = credentialsOf(o.Output.Credentials)
	}
	return res, nil
}

// view reads in one snapshot.
func (s *Service) view(ctx context.Context, fn func(tx store.Tx) error) error {
	if err := s.opts.Store.View(ctx, fn); err != nil {
		return storeError(err)
	}
	return nil
}

func (s *Service) update(ctx context.Context, fn func(tx store.Tx) error) error {
	if err := s.opts.Store.Update(ctx, fn); err != nil {
		return storeError(err)
	}
	return nil
}

// storeError passes *Error through and wraps anything else as a 500.
func storeError(err error) error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return internal("the broker's store failed: %v", err)
}

// busy describes the job holding an instance, for a ConcurrencyError.
func busy(tx store.Tx, inst *store.Instance) *Error {
	j, err := store.GetJob(tx, inst.Lock)
	if err != nil {
		return concurrency("another operation (%s) is in progress on instance %s: retry when it is done", inst.Lock, inst.ID)
	}
	what := string(j.Method)
	if j.BindingID != "" {
		what += " of binding " + j.BindingID
	}
	return concurrency("another operation is in progress on instance %s: %s (operation %s, since %s): retry when it is done",
		inst.ID, what, j.Token, j.CreatedAt.UTC().Format(time.RFC3339))
}

// deleteIfFinished removes a job that a new one supersedes.
func deleteIfFinished(tx store.Tx, token string) error {
	if token == "" {
		return nil
	}
	j, err := store.GetJob(tx, token)
	if store.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if j.State.Finished() {
		return store.DeleteJob(tx, token)
	}
	return nil
}

func (s *Service) logAccepted(job *store.Job, c Common) {
	s.opts.Logger.Info("operation accepted", "method", job.Method, "operation", job.Token,
		"instance", job.InstanceID, "binding", job.BindingID, "request_id", c.RequestID,
		"accepts_incomplete", c.AcceptsIncomplete, "deferred", job.Deferred)
}

// specOf returns the spec of an existing instance, marked or not.
func (s *Service) specOf(inst *store.Instance) (specs.Entry, error) {
	e, ok := s.opts.Catalog.Lookup(inst.ServiceID)
	if !ok {
		return specs.Entry{}, internal("the spec of service_id %q, which instance %s uses, is not known to the broker: it cannot run the instance's actions", inst.ServiceID, inst.ID)
	}
	return e, nil
}

// beforeSpec answers a request about an instance whose spec the broker
// does not know. An instance that an operation holds (a provision deferred
// while the broker bootstraps, say) is answered 422 ConcurrencyError, a
// failed one that an update or bind cannot use 422; only otherwise is the
// missing spec the answer (500).
func (s *Service) beforeSpec(ctx context.Context, inst *store.Instance, m store.Method, specErr error) error {
	if inst.Lock != "" {
		var err error
		if viewErr := s.view(ctx, func(tx store.Tx) error {
			err = busy(tx, inst)
			return nil
		}); viewErr != nil {
			return viewErr
		}
		return err
	}
	if inst.State == store.InstanceFailed && (m == store.Update || m == store.Bind) {
		return errorf(Unprocessable, "", "instance %s failed to provision: it can only be deprovisioned (or provisioned again with the same request)", inst.ID)
	}
	return specErr
}

func pretty(ids []string) string { return fmt.Sprintf("%q", ids) }
