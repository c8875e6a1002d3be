package lifecycle

import (
	"context"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded/bundle"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/store"
)

// Every mutating request follows one sequence: check its ids and body,
// load what it acts on, check it against the spec, build its job, then in
// one transaction reload what it changes, check that no other operation
// holds it, detect a repeat of the same request, store the job with its
// records, and answer. A verb says only what is particular to it: its
// checks, its job, and what its transaction reads and writes (claim).

// claim is a verb's part of the transaction: it reloads and checks the
// records the request changes and writes them. A repeat of an operation
// still in progress returns its answer instead, and nothing is written.
type claim func(tx store.Tx) (repeat *Result, err error)

// mutate runs claim and stores job in one transaction, then runs the job
// and answers with success when it ends in time, or with a repeat's answer.
func (s *Service) mutate(ctx context.Context, c Common, job *store.Job, success Status, fn claim) (Result, error) {
	var repeat *Result
	err := s.update(ctx, func(tx store.Tx) error {
		var err error
		if repeat, err = fn(tx); err != nil || repeat != nil {
			return err
		}
		return store.PutJob(tx, job)
	})
	if err != nil {
		return Result{}, err
	}
	if repeat != nil {
		return *repeat, nil
	}
	s.logAccepted(job, c)
	if job.Deferred {
		// The job waits for its spec: the runner that finds it claims it.
		return Result{Status: Accepted, Operation: job.Token}, nil
	}
	return s.answer(ctx, job, c, success)
}

// loadInstance reads an instance before the transaction; a missing one is
// an error of the given kind (404 for a request that needs it, 410 for a
// delete).
func (s *Service) loadInstance(ctx context.Context, id string, missing Kind) (*store.Instance, error) {
	var inst *store.Instance
	err := s.view(ctx, func(tx store.Tx) error {
		var err error
		inst, err = reloadInstance(tx, id, missing)
		return err
	})
	return inst, err
}

// reloadInstance reads an instance in a transaction; a missing one is an
// error of the given kind.
func reloadInstance(tx store.Tx, id string, missing Kind) (*store.Instance, error) {
	inst, err := store.GetInstance(tx, id)
	if store.IsNotFound(err) {
		return nil, errorf(missing, "", "instance %s does not exist", id)
	}
	return inst, err
}

// inProgress answers a request that repeats an operation still in
// progress: 202 with its operation when the request accepts an
// asynchronous answer, 422 ConcurrencyError otherwise. what says what is
// going on, for a person ("instance x is being provisioned").
func inProgress(c Common, operation, what string) (*Result, error) {
	if !c.AcceptsIncomplete {
		return nil, concurrency("%s (operation %s): send accepts_incomplete=true to follow it, or retry when it is done", what, operation)
	}
	return &Result{Status: Accepted, Operation: operation}, nil
}

// repeatOrBusy answers a request for an instance that an operation holds:
// a repeat of that operation (same says whether it is one) is followed,
// anything else is refused as busy.
func repeatOrBusy(tx store.Tx, c Common, inst *store.Instance, same func(*store.Job) bool, what string) (*Result, error) {
	if lj, err := store.GetJob(tx, inst.Lock); err == nil && same(lj) {
		return inProgress(c, lj.Token, what)
	}
	return nil, busy(tx, inst)
}

// requireAsync refuses a request without accepts_incomplete for a plan
// whose actions run asynchronously.
func requireAsync(c Common, spec *bundle.Spec, planID string) error {
	if spec.Asynchronous(planID) && !c.AcceptsIncomplete {
		return asyncRequired("service %q runs its actions asynchronously: send accepts_incomplete=true", spec.Name())
	}
	return nil
}

// takeInstance makes job the instance's latest operation and its lock,
// deleting the finished operation it supersedes.
func (s *Service) takeInstance(tx store.Tx, inst *store.Instance, job *store.Job) error {
	if err := deleteIfFinished(tx, inst.Job); err != nil {
		return err
	}
	inst.Job, inst.Lock, inst.UpdatedAt = job.Token, job.Token, s.opts.Clock.Now()
	return store.PutInstance(tx, inst)
}
