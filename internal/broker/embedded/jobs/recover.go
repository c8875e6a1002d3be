package jobs

import (
	"context"
	"fmt"
	"os"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded/bundle"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/executor"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/store"
)

// Kick starts the deferred jobs whose spec is now known, and fails those
// whose spec is gone once bootstrapping is over. It returns the tokens it
// started and failed.
func (r *Runner) Kick(ctx context.Context) (started, failed []string, err error) {
	var pending []*store.Job
	if err := r.opts.Store.View(ctx, func(tx store.Tx) error {
		jobs, err := store.ListJobs(tx)
		for _, j := range jobs {
			if j.State == store.JobPending {
				pending = append(pending, j)
			}
		}
		return err
	}); err != nil {
		return nil, nil, fmt.Errorf("list pending jobs: %w", err)
	}
	for _, j := range pending {
		entry, known := r.opts.Catalog.Lookup(j.Request.ServiceID)
		if known && !entry.Marked {
			if _, ok := entry.Spec.Plan(j.Request.PlanID); ok {
				claimed, err := r.claim(ctx, j.Token)
				if err != nil {
					return started, failed, err
				}
				if claimed {
					r.Run(j.Token)
					started = append(started, j.Token)
				}
				continue
			}
		}
		if !r.opts.Bootstrapped() {
			continue // the spec may still come
		}
		desc := fmt.Sprintf("service_id %q with plan_id %q is not offered by any registry of this broker now that it has loaded them all: the %s was not started",
			j.Request.ServiceID, j.Request.PlanID, j.Method)
		if known && entry.Marked {
			desc = fmt.Sprintf("service %q (%s) was removed (%s) and accepts no new provisions: the %s was not started",
				entry.Spec.Name(), j.Request.ServiceID, entry.MarkReason, j.Method)
		}
		did, err := r.fail(ctx, j.Token, store.JobPending, "", desc, false)
		if err != nil {
			return started, failed, err
		}
		if did {
			failed = append(failed, j.Token)
		}
	}
	return started, failed, nil
}

// claim makes a pending job this runner's.
func (r *Runner) claim(ctx context.Context, token string) (bool, error) {
	claimed := false
	err := r.opts.Store.Update(ctx, func(tx store.Tx) error {
		claimed = false
		j, err := store.GetJob(tx, token)
		if store.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if j.State != store.JobPending {
			return nil
		}
		j.State, j.RunnerID, j.StartedAt = store.JobRunning, r.opts.RunnerID, r.opts.Clock.Now()
		claimed = true
		return store.PutJob(tx, j)
	})
	if err != nil {
		return false, fmt.Errorf("claim job %s: %w", token, err)
	}
	return claimed, nil
}

// fail records a job as failed, if it is still in the given state (and,
// when runner is not empty, claimed by that runner). mayHaveRun says
// whether its action may have started: a job of a stopped runner may have,
// so cleanup will run the bundle's deprovision or unbind.
func (r *Runner) fail(ctx context.Context, token string, from store.JobState, runner, desc string, mayHaveRun bool) (bool, error) {
	did := false
	err := r.opts.Store.Update(ctx, func(tx store.Tx) error {
		did = false
		j, err := store.GetJob(tx, token)
		if store.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if j.State != from || (runner != "" && j.RunnerID != runner) {
			return nil
		}
		j.State, j.Description, j.Error, j.FinishedAt = store.JobFailed, desc, desc, r.opts.Clock.Now()
		j.ActionRan = mayHaveRun
		did = true
		return applyOutcome(tx, j, executor.Result{})
	})
	if err != nil {
		return false, fmt.Errorf("fail job %s: %w", token, err)
	}
	if did {
		r.opts.Logger.Warn("job failed without running", "job", token, "reason", desc)
	}
	return did, nil
}

// failUnstarted fails a job this runner claimed but will not run.
func (r *Runner) failUnstarted(token, desc string) Outcome {
	ctx, cancel := storeCtx()
	defer cancel()
	if _, err := r.fail(ctx, token, store.JobRunning, r.opts.RunnerID, desc, false); err != nil {
		r.opts.Logger.Error("fail a job at shutdown", "job", token, "error", err)
	}
	var j *store.Job
	if err := r.opts.Store.View(ctx, func(tx store.Tx) error {
		var err error
		j, err = store.GetJob(tx, token)
		return err
	}); err != nil || j == nil {
		return Outcome{Job: store.Job{Token: token, State: store.JobFailed, Description: desc}}
	}
	return Outcome{Job: *j}
}

// Recover fails the jobs whose runner stopped: on an exclusive store every
// runner but this one is gone; on a shared store a runner is gone when its
// heartbeat is older than RunnerTimeout. It returns the tokens it failed and
// removes the records of runners that are gone.
func (r *Runner) Recover(ctx context.Context) ([]string, error) {
	var jobs []*store.Job
	var runners []*store.Runner
	if err := r.opts.Store.View(ctx, func(tx store.Tx) error {
		var err error
		if jobs, err = store.ListJobs(tx); err != nil {
			return err
		}
		runners, err = store.ListRunners(tx)
		return err
	}); err != nil {
		return nil, fmt.Errorf("recover jobs: %w", err)
	}
	now := r.opts.Clock.Now()
	host, _ := os.Hostname()
	alive := map[string]bool{r.opts.RunnerID: true}
	var gone []string
	// local are the stopped runners of this host: their leftover action
	// processes can be found and ended here.
	local := map[string]bool{}
	for _, rr := range runners {
		if rr.ID == r.opts.RunnerID {
			continue
		}
		if !r.opts.Store.Exclusive() && now.Sub(rr.Heartbeat) < r.opts.RunnerTimeout {
			alive[rr.ID] = true
		} else {
			gone = append(gone, rr.ID)
			if r.opts.Store.Exclusive() || rr.Host == host {
				local[rr.ID] = true
			}
		}
	}
	known := map[string]bool{}
	for _, rr := range runners {
		known[rr.ID] = true
	}
	var failed []string
	for _, j := range jobs {
		if j.State != store.JobRunning || alive[j.RunnerID] {
			continue
		}
		// On a shared store, a runner without any record may not have
		// written its first heartbeat yet: give it RunnerTimeout.
		if !r.opts.Store.Exclusive() && !known[j.RunnerID] && now.Sub(j.StartedAt) < r.opts.RunnerTimeout {
			continue
		}
		if r.opts.Store.Exclusive() {
			local[j.RunnerID] = true // an exclusive store has one host
		}
		r.reap(j.RunnerID, local)
		desc := fmt.Sprintf("the broker process that ran this %s (runner %s) stopped before it finished, so its outcome is unknown: retry the operation%s",
			j.Method, j.RunnerID, cleanupHint(j.Method))
		did, err := r.fail(ctx, j.Token, store.JobRunning, j.RunnerID, desc, true)
		if err != nil {
			return failed, err
		}
		if did {
			failed = append(failed, j.Token)
		}
	}
	for _, id := range gone {
		r.reap(id, local)
		if err := r.opts.Store.Update(ctx, func(tx store.Tx) error { return store.DeleteRunner(tx, id) }); err != nil {
			return failed, fmt.Errorf("remove the record of stopped runner %s: %w", id, err)
		}
	}
	return failed, nil
}

// reap ends the leftover processes of a stopped runner of this host, once.
func (r *Runner) reap(runnerID string, local map[string]bool) {
	if r.opts.Reap == nil || !local[runnerID] {
		return
	}
	delete(local, runnerID)
	n, err := r.opts.Reap(runnerID)
	switch {
	case err != nil:
		r.opts.Logger.Warn("end the action processes a stopped broker process left behind", "runner", runnerID, "error", err)
	case n > 0:
		r.opts.Logger.Warn("ended action processes that a stopped broker process left behind", "runner", runnerID, "processes", n)
	}
}

func cleanupHint(m store.Method) string {
	switch bundle.Action(m) {
	case bundle.Provision:
		return " (or deprovision the instance to clean up)"
	case bundle.Bind:
		return " (or unbind to clean up)"
	}
	return ""
}
