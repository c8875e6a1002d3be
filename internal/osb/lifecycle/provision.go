package lifecycle

import (
	"context"
	"time"

	"github.com/lockstep-dev/lockstep/internal/osb/bundle"
	"github.com/lockstep-dev/lockstep/internal/osb/store"
)

// Provision creates an instance.
func (s *Service) Provision(ctx context.Context, req ProvisionRequest) (Result, error) {
	if err := checkID("instance_id", req.InstanceID); err != nil {
		return Result{}, err
	}
	if req.ServiceID == "" || req.PlanID == "" {
		return Result{}, badRequest("service_id and plan_id are required")
	}
	params, err := objectOrEmpty("parameters", req.Parameters)
	if err != nil {
		return Result{}, err
	}
	reqContext, err := optionalObject("context", req.Context)
	if err != nil {
		return Result{}, err
	}

	entry, known := s.opts.Catalog.Lookup(req.ServiceID)
	deferred := false
	switch {
	case known && !entry.Marked:
		spec := entry.Spec
		if _, ok := spec.Plan(req.PlanID); !ok {
			return Result{}, badRequest("plan_id %q is not a plan of service %q (its plans: %s)", req.PlanID, spec.Name(), pretty(spec.PlanIDs()))
		}
		if err := spec.ValidateParameters(req.PlanID, bundle.CreateSchema, params); err != nil {
			return Result{}, badRequest("%v", err)
		}
		if spec.Asynchronous(req.PlanID) && !req.AcceptsIncomplete {
			return Result{}, asyncRequired("service %q runs its actions asynchronously: send accepts_incomplete=true", spec.Name())
		}
	case !s.opts.Bootstrapped():
		if !req.AcceptsIncomplete {
			if res, ok, err := s.repeatOfExisting(ctx, req, params); ok || err != nil {
				return res, err
			}
			return Result{}, asyncRequired("the broker is still loading its service specs and does not know service_id %q yet: send accepts_incomplete=true to have the provision wait for it", req.ServiceID)
		}
		deferred = true
	default:
		// A repeat for an instance that exists is answered from its record
		// even when its spec left the catalog since.
		if res, ok, err := s.repeatOfExisting(ctx, req, params); ok || err != nil {
			return res, err
		}
		if known {
			return Result{}, removedError(entry.Spec.Name(), req.ServiceID, entry.MarkReason)
		}
		return Result{}, badRequest("service_id %q is not in the broker's catalog", req.ServiceID)
	}

	job := s.newJob(store.Provision, req.InstanceID, "", req.Common, store.JobRequest{
		ServiceID: req.ServiceID, PlanID: req.PlanID, Parameters: params, Context: reqContext,
		OrganizationGUID: req.OrganizationGUID, SpaceGUID: req.SpaceGUID,
	})
	if deferred {
		// Unclaimed: the runner that finds its spec claims it (Kick).
		job.State, job.RunnerID, job.Deferred, job.StartedAt = store.JobPending, "", true, time.Time{}
	}
	now := s.opts.Now()
	inst := &store.Instance{
		ID: req.InstanceID, ServiceID: req.ServiceID, PlanID: req.PlanID, Parameters: params, Context: reqContext,
		OrganizationGUID: req.OrganizationGUID, SpaceGUID: req.SpaceGUID, State: store.InstanceProvisioning,
		Job: job.Token, Lock: job.Token, CreatedAt: now, UpdatedAt: now,
	}
	checkSpec := ""
	if !deferred {
		checkSpec = entry.Spec.Name()
	}
	existing, existingJob, err := s.createInstance(ctx, inst, job, checkSpec)
	if err != nil {
		return Result{}, err
	}
	if existing != nil {
		return s.repeatProvision(req, params, existing, existingJob)
	}
	s.logAccepted(job, req.Common)
	if deferred {
		return Result{Status: Accepted, Operation: job.Token}, nil
	}
	return s.answer(ctx, job, req.Common, Created)
}

// createInstance stores a new instance and its provision job, unless the
// instance exists (then it returns it and its latest job). When specName is
// set, the spec must still be live in the store: a spec marked or swept
// since the request was checked refuses the provision.
func (s *Service) createInstance(ctx context.Context, inst *store.Instance, job *store.Job, specName string) (*store.Instance, *store.Job, error) {
	var existing *store.Instance
	var existingJob *store.Job
	err := s.update(ctx, func(tx store.Tx) error {
		existing, existingJob = nil, nil
		cur, err := store.GetInstance(tx, inst.ID)
		switch {
		case err == nil:
			existing = cur
			if existingJob, err = store.GetJob(tx, cur.Job); store.IsNotFound(err) {
				err = nil
			}
			return err
		case !store.IsNotFound(err):
			return err
		}
		if specName != "" {
			mark, err := store.GetSpecMark(tx, inst.ServiceID)
			if store.IsNotFound(err) || (err == nil && mark.Marked) {
				return removedError(specName, inst.ServiceID, "it was removed from its registry while this request was checked")
			}
			if err != nil {
				return err
			}
		}
		if err := store.PutInstance(tx, inst); err != nil {
			return err
		}
		return store.PutJob(tx, job)
	})
	return existing, existingJob, err
}

func removedError(name, serviceID, reason string) *Error {
	return badRequest("service %q (%s) was removed from the catalog (%s): it accepts no new provisions; existing instances can still be updated, bound and deprovisioned",
		name, serviceID, reason)
}

// repeatOfExisting answers a provision of an instance that exists; ok is
// false when it does not.
func (s *Service) repeatOfExisting(ctx context.Context, req ProvisionRequest, params []byte) (Result, bool, error) {
	var inst *store.Instance
	var job *store.Job
	err := s.view(ctx, func(tx store.Tx) error {
		cur, err := store.GetInstance(tx, req.InstanceID)
		if store.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		inst = cur
		if job, err = store.GetJob(tx, inst.Job); store.IsNotFound(err) {
			err = nil
		}
		return err
	})
	if err != nil {
		return Result{}, false, err
	}
	if inst == nil {
		return Result{}, false, nil
	}
	res, err := s.repeatProvision(req, params, inst, job)
	return res, true, err
}

// repeatProvision answers a provision of an instance that exists.
func (s *Service) repeatProvision(req ProvisionRequest, params []byte, inst *store.Instance, job *store.Job) (Result, error) {
	same := inst.ServiceID == req.ServiceID && inst.PlanID == req.PlanID && sameJSON(inst.Parameters, params) &&
		inst.OrganizationGUID == req.OrganizationGUID && inst.SpaceGUID == req.SpaceGUID
	if !same {
		return Result{}, errorf(Conflict, "", "instance %s already exists with other attributes (service_id, plan_id, parameters, organization or space): deprovision it first, or use another instance id", inst.ID)
	}
	switch inst.State {
	case store.InstanceProvisioned:
		return Result{Status: OK, DashboardURL: inst.DashboardURL}, nil
	case store.InstanceProvisioning:
		if !req.AcceptsIncomplete {
			return Result{}, asyncRequired("instance %s is still being provisioned (operation %s): send accepts_incomplete=true to follow it", inst.ID, inst.Job)
		}
		return Result{Status: Accepted, Operation: inst.Job}, nil
	default:
		why := ""
		if job != nil && job.Description != "" {
			why = " (" + job.Description + ")"
		}
		return Result{}, errorf(Conflict, "", "instance %s exists but its provision failed%s: deprovision it before provisioning it again", inst.ID, why)
	}
}
