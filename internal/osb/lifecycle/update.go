package lifecycle

import (
	"context"

	"github.com/lockstep-dev/lockstep/internal/osb/bundle"
	"github.com/lockstep-dev/lockstep/internal/osb/store"
)

// Update changes an instance's plan and/or parameters. Parameters, when
// given, replace the instance's (create-only properties carry over);
// absent, they stay.
func (s *Service) Update(ctx context.Context, req UpdateRequest) (Result, error) {
	if err := checkID("instance_id", req.InstanceID); err != nil {
		return Result{}, err
	}
	if req.ServiceID == "" {
		return Result{}, badRequest("service_id is required")
	}
	given, err := optionalObject("parameters", req.Parameters)
	if err != nil {
		return Result{}, err
	}
	reqContext, err := optionalObject("context", req.Context)
	if err != nil {
		return Result{}, err
	}
	var inst *store.Instance
	if err := s.view(ctx, func(tx store.Tx) error {
		var err error
		inst, err = store.GetInstance(tx, req.InstanceID)
		if store.IsNotFound(err) {
			return errorf(NotFound, "", "instance %s does not exist", req.InstanceID)
		}
		return err
	}); err != nil {
		return Result{}, err
	}
	if inst.ServiceID != req.ServiceID {
		return Result{}, badRequest("service_id %q is not the service of instance %s (%q)", req.ServiceID, inst.ID, inst.ServiceID)
	}
	entry, err := s.specOf(inst)
	if err != nil {
		return Result{}, s.beforeSpec(ctx, inst, store.Update, err)
	}
	spec := entry.Spec
	plan := inst.PlanID
	_, planKnown := spec.Plan(inst.PlanID)
	if req.PlanID != "" && req.PlanID != inst.PlanID {
		if _, ok := spec.Plan(req.PlanID); !ok {
			return Result{}, badRequest("plan_id %q is not a plan of service %q (its plans: %s)", req.PlanID, spec.Name(), pretty(spec.PlanIDs()))
		}
		if !planKnown {
			return Result{}, errorf(Unprocessable, "", "plan %q was removed from service %q, so the broker no longer knows whether an instance of it can change plans: it can still update its parameters, be bound and be deprovisioned", inst.PlanID, spec.Name())
		}
		if cur, _ := spec.Plan(inst.PlanID); !cur.Updateable {
			return Result{}, errorf(Unprocessable, "", "plan %q of service %q is not updateable: an instance of it cannot change plans (deprovision and provision again)", inst.PlanID, spec.Name())
		}
		plan = req.PlanID
	}
	params := inst.Parameters
	if given != nil {
		if _, ok := spec.Plan(plan); ok {
			next, toValidate, err := applyCreateOnly(inst.Parameters, given, spec.CreateOnly(plan))
			if err != nil {
				return Result{}, err
			}
			if err := spec.ValidateParameters(plan, bundle.UpdateSchema, toValidate); err != nil {
				return Result{}, badRequest("%v", err)
			}
			params = next
		} else {
			// The plan left its bundle, and its schemas with it: the
			// parameters go to the update action as they are (it may
			// refuse them).
			params = given
		}
	}
	if reqContext == nil {
		reqContext = inst.Context
	}

	job := s.newJob(store.Update, inst.ID, "", req.Common, store.JobRequest{
		ServiceID: inst.ServiceID, PlanID: plan, PreviousPlanID: inst.PlanID,
		Parameters: params, PreviousParameters: inst.Parameters, Context: reqContext,
		OrganizationGUID: inst.OrganizationGUID, SpaceGUID: inst.SpaceGUID,
	})
	var repeat *Result
	err = s.update(ctx, func(tx store.Tx) error {
		repeat = nil
		cur, err := store.GetInstance(tx, inst.ID)
		if store.IsNotFound(err) {
			return errorf(NotFound, "", "instance %s does not exist", inst.ID)
		}
		if err != nil {
			return err
		}
		switch cur.State {
		case store.InstanceProvisioning:
			return concurrency("instance %s is still being provisioned (operation %s): update it when that is done", cur.ID, cur.Job)
		case store.InstanceFailed:
			return errorf(Unprocessable, "", "instance %s failed to provision: it can only be deprovisioned", cur.ID)
		}
		if cur.Lock != "" {
			lj, err := store.GetJob(tx, cur.Lock)
			if err == nil && lj.Method == store.Update && lj.Request.PlanID == plan && sameJSON(lj.Request.Parameters, params) {
				if !req.AcceptsIncomplete {
					return concurrency("this update of instance %s is already in progress (operation %s): send accepts_incomplete=true to follow it, or retry when it is done", cur.ID, lj.Token)
				}
				repeat = &Result{Status: Accepted, Operation: lj.Token}
				return nil
			}
			return busy(tx, cur)
		}
		if spec.Asynchronous(plan) && !req.AcceptsIncomplete {
			return asyncRequired("service %q runs its actions asynchronously: send accepts_incomplete=true", spec.Name())
		}
		if err := deleteIfFinished(tx, cur.Job); err != nil {
			return err
		}
		cur.Job, cur.Lock, cur.UpdatedAt = job.Token, job.Token, s.opts.Now()
		if err := store.PutInstance(tx, cur); err != nil {
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
	s.logAccepted(job, req.Common)
	return s.answer(ctx, job, req.Common, OK)
}
