package lifecycle

import (
	"context"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded/bundle"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/store"
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
	inst, err := s.loadInstance(ctx, req.InstanceID, NotFound)
	if err != nil {
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
	return s.mutate(ctx, req.Common, job, OK, func(tx store.Tx) (*Result, error) {
		cur, err := reloadInstance(tx, inst.ID, NotFound)
		if err != nil {
			return nil, err
		}
		switch cur.State {
		case store.InstanceProvisioning:
			return nil, concurrency("instance %s is still being provisioned (operation %s): update it when that is done", cur.ID, cur.Job)
		case store.InstanceFailed:
			return nil, errorf(Unprocessable, "", "instance %s failed to provision: it can only be deprovisioned", cur.ID)
		}
		if cur.Lock != "" {
			same := func(lj *store.Job) bool {
				return lj.Method == store.Update && lj.Request.PlanID == plan && sameJSON(lj.Request.Parameters, params)
			}
			return repeatOrBusy(tx, req.Common, cur, same, "this update of instance "+cur.ID+" is already in progress")
		}
		if err := requireAsync(req.Common, spec, plan); err != nil {
			return nil, err
		}
		return nil, s.takeInstance(tx, cur, job)
	})
}
