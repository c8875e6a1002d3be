package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded/bundle"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/executor"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/specs"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/store"
)

// execute runs one claimed job to its end.
func (r *Runner) execute(token string) Outcome {
	ctx, cancel := storeCtx()
	defer cancel()
	var job *store.Job
	var state map[string]string
	err := r.opts.Store.View(ctx, func(tx store.Tx) error {
		var err error
		if job, err = store.GetJob(tx, token); err != nil {
			return err
		}
		if job.Method != store.Provision || job.Retry {
			state, err = store.GetState(tx, job.InstanceID)
		}
		return err
	})
	if err != nil {
		r.opts.Logger.Error("load a job to run it", "job", token, "error", err)
		return Outcome{Job: store.Job{Token: token, State: store.JobFailed,
			Description: "the broker could not read this operation from its store: " + err.Error(), Error: err.Error()}}
	}
	if job.State != store.JobRunning || job.RunnerID != r.opts.RunnerID {
		return Outcome{Job: *job}
	}
	entry, ok := r.opts.Catalog.Lookup(job.Request.ServiceID)
	if !ok {
		return r.finish(job, executor.Result{}, errNoSpec(job), 0, false)
	}
	if job.Method == store.Provision {
		if err := checkProvision(job, entry); err != nil {
			return r.finish(job, executor.Result{}, err, 0, false)
		}
	}

	select {
	case r.sem <- struct{}{}:
	case <-r.ctx.Done():
		return r.finish(job, executor.Result{}, errShutdownBeforeStart, 0, false)
	}
	defer func() { <-r.sem }()

	// The bundle's timeout (or the default), within the maximum,
	// shortened by the job's own bound (a request without
	// accepts_incomplete is bounded by the sync timeout).
	timeout := entry.Spec.Timeout()
	if timeout <= 0 {
		timeout = r.opts.Timeout
	}
	if r.opts.MaxTimeout > 0 && r.opts.MaxTimeout < timeout {
		timeout = r.opts.MaxTimeout
	}
	if job.Timeout > 0 && job.Timeout < timeout {
		timeout = job.Timeout
	}
	runCtx, cancelRun := context.WithTimeout(r.ctx, timeout)
	defer cancelRun()
	action := bundle.Action(job.Method)
	inv := executor.Invocation{
		Bundle:  &entry.Spec.Bundle,
		Action:  action,
		Program: entry.Spec.Program(action),
		State:   state,
		Retry:   job.Retry,
		Input: executor.Input{
			Action: action, Operation: job.Token, InstanceID: job.InstanceID, BindingID: job.BindingID,
			JobRequest: job.Request, Identity: job.Identity, RequestID: job.RequestID,
		},
		Started: func(sofar func() executor.Output) { r.started(job.Token, sofar) },
	}
	start := r.opts.Clock.Now()
	r.opts.Logger.Info("action started", "job", job.Token, "method", job.Method, "instance", job.InstanceID,
		"binding", job.BindingID, "service", entry.Spec.Name(), "program", inv.Program, "timeout", timeout)
	res, runErr := r.opts.Executor.Run(runCtx, inv)
	if runErr != nil && r.ctx.Err() != nil {
		runErr = fmt.Errorf("%w: %w", errShutdown, runErr)
	}
	out := r.finish(job, res, runErr, timeout, true)
	r.checkDashboardURL(out)
	r.opts.Logger.Info("action finished", "job", job.Token, "method", job.Method, "instance", job.InstanceID,
		"binding", job.BindingID, "state", out.Job.State, "duration", r.opts.Clock.Now().Sub(start))
	return out
}

var (
	errShutdown            = errors.New("the broker shut down while the action ran")
	errShutdownBeforeStart = errors.New("the broker shut down before the action started")
)

// specError is a job that cannot run because of its spec; the action never
// starts.
type specError struct{ msg string }

func (e *specError) Error() string { return e.msg }

func errNoSpec(job *store.Job) error {
	return &specError{fmt.Sprintf("service_id %q is not known to the broker (its spec was deleted or never existed): the %s was not started",
		job.Request.ServiceID, job.Method)}
}

// checkProvision re-checks a provision against its spec when it starts: a
// deferred one was accepted before the spec was known, and a spec may have
// been marked since the request.
func checkProvision(job *store.Job, e specs.Entry) error {
	name := e.Spec.Name()
	if e.Marked {
		return &specError{fmt.Sprintf("service %q (%s) was removed (%s) and accepts no new provisions: the provision was not started",
			name, e.Spec.ServiceID(), e.MarkReason)}
	}
	if _, ok := e.Spec.Plan(job.Request.PlanID); !ok {
		return &specError{fmt.Sprintf("plan_id %q is not a plan of service %q (plans: %v): the provision was not started",
			job.Request.PlanID, name, e.Spec.PlanIDs())}
	}
	if err := e.Spec.ValidateParameters(job.Request.PlanID, bundle.CreateSchema, job.Request.Parameters); err != nil {
		return &specError{err.Error() + ": the provision was not started"}
	}
	return nil
}

// describe turns the end of a run into the job's description and error.
func describe(job *store.Job, res executor.Result, runErr error, timeout time.Duration) (state store.JobState, desc, errText string) {
	m := job.Method
	if runErr == nil {
		if res.Output.Description != "" {
			return store.JobSucceeded, res.Output.Description, ""
		}
		return store.JobSucceeded, fmt.Sprintf("%s succeeded", m), ""
	}
	var se *specError
	var ae *executor.ActionError
	switch {
	case errors.As(runErr, &se):
		return store.JobFailed, se.msg, se.msg
	case errors.Is(runErr, errShutdownBeforeStart):
		return store.JobFailed, fmt.Sprintf("%s: the operation was not started; retry it", errShutdownBeforeStart), runErr.Error()
	case errors.Is(runErr, errShutdown):
		return store.JobFailed, fmt.Sprintf("the broker shut down while the %s ran; the action was stopped and its outcome is unknown: retry the operation", m), runErr.Error()
	case errors.As(runErr, &ae) && ae.Refused:
		desc := ae.Description
		if desc == "" {
			desc = "the action gave no reason"
		}
		return store.JobFailed, fmt.Sprintf("%s refused: %s", m, desc), runErr.Error()
	case errors.As(runErr, &ae) && errors.Is(ae.Err, context.DeadlineExceeded):
		return store.JobFailed, fmt.Sprintf("%s timed out after %s and was stopped (its processes were killed)", m, timeout), runErr.Error()
	case errors.As(runErr, &ae) && ae.Description != "":
		return store.JobFailed, fmt.Sprintf("%s failed: %s", m, ae.Description), runErr.Error()
	case errors.As(runErr, &ae) && ae.Err != nil:
		return store.JobFailed, fmt.Sprintf("%s failed: %v", m, ae.Err), runErr.Error()
	default:
		return store.JobFailed, fmt.Sprintf("%s failed: %v", m, runErr), runErr.Error()
	}
}

// finish records the outcome of a run.
func (r *Runner) finish(job *store.Job, res executor.Result, runErr error, timeout time.Duration, ran bool) Outcome {
	state, desc, errText := describe(job, res, runErr, timeout)
	final := *job
	final.State, final.Description, final.Error, final.FinishedAt = state, desc, errText, r.opts.Clock.Now()
	final.ActionRan = ran
	var ae *executor.ActionError
	final.Refused = errors.As(runErr, &ae) && ae.Refused
	if runErr != nil {
		final.InstanceUsable, final.UpdateRepeatable = res.Output.InstanceUsable, res.Output.UpdateRepeatable
	}
	ctx, cancel := storeCtx()
	defer cancel()
	err := r.opts.Store.Update(ctx, func(tx store.Tx) error {
		cur, err := store.GetJob(tx, job.Token)
		if store.IsNotFound(err) {
			return errNotOurs
		}
		if err != nil {
			return err
		}
		if cur.State != store.JobRunning || cur.RunnerID != r.opts.RunnerID {
			return errNotOurs
		}
		j := final
		return applyOutcome(tx, &j, res)
	})
	switch {
	case errors.Is(err, errNotOurs):
		r.opts.Logger.Warn("a job ended after another broker process settled it (it judged this one gone); its late outcome is not recorded",
			"job", job.Token, "method", job.Method, "instance", job.InstanceID, "late_state", state)
		final.State = store.JobFailed
		final.Description = "the operation was settled by another broker process while this one still ran it; its outcome here is not recorded"
	case err != nil:
		r.opts.Logger.Error("record the outcome of a job", "job", job.Token, "method", job.Method, "instance", job.InstanceID, "error", err)
		final.State = store.JobFailed
		final.Description = fmt.Sprintf("%s: the broker could not record its outcome (%v)", desc, err)
	}
	return Outcome{Job: final, Output: res.Output}
}
