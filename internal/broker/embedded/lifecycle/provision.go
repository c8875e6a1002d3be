package lifecycle

import (
	"context"
	"time"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded/bundle"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/store"
)

// Provision creates an instance.
func (s *Service) Provision(ctx context.Context, req ProvisionRequest) (Result, error) {
	if err := checkID("instance_id", req.InstanceID); err != nil {
		return Result{}, err
	}
	if req.ServiceID == "" || req.PlanID == "" {
		return Result{}, badRequest("service_id and plan_id are required")
	}
	if req.OrganizationGUID == "" || req.SpaceGUID == "" {
		return Result{}, badRequest("organization_guid and space_guid are required in a provision request (OSB 2.17 requires them, deprecated as they are; a platform without organizations and spaces sends any non-empty value, and its context)")
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
		if asyncErr := requireAsync(req.Common, spec, req.PlanID); asyncErr != nil {
			if res, ok, err := s.repeatOfExisting(ctx, req, params); ok || err != nil {
				return res, err
			}
			return Result{}, asyncErr
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
	now := s.opts.Clock.Now()
	inst := &store.Instance{
		ID: req.InstanceID, ServiceID: req.ServiceID, PlanID: req.PlanID, Parameters: params, Context: reqContext,
		OrganizationGUID: req.OrganizationGUID, SpaceGUID: req.SpaceGUID, State: store.InstanceProvisioning,
		Job: job.Token, Lock: job.Token, CreatedAt: now, UpdatedAt: now,
	}
	checkSpec := ""
	if !deferred {
		checkSpec = entry.Spec.Name()
	}
	return s.mutate(ctx, req.Common, job, Created, s.createInstance(req, inst, job, checkSpec))
}

// existing is an instance that a provision request found, with what the
// answer needs to know about it.
type existing struct {
	inst *store.Instance
	// job is the instance's latest operation (nil when lost).
	job *store.Job
	// busy is set when an operation other than its provision holds the
	// instance.
	busy *Error
}

func loadExisting(tx store.Tx, id string) (*existing, error) {
	inst, err := store.GetInstance(tx, id)
	if store.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	e := &existing{inst: inst}
	if e.job, err = store.GetJob(tx, inst.Job); err != nil && !store.IsNotFound(err) {
		return nil, err
	}
	if inst.Lock != "" && inst.State != store.InstanceProvisioning {
		e.busy = busy(tx, inst)
	}
	return e, nil
}

// createInstance claims a new instance for its provision job; when the
// instance exists it answers the request as a repeat instead, except that
// an identical repeat of a failed provision runs the provision again (the
// instance record and job are replaced, the job marked as a retry).
// When specName is set, the spec must still be live in the store: a spec
// marked or swept since the request was checked refuses the provision.
func (s *Service) createInstance(req ProvisionRequest, inst *store.Instance, job *store.Job, specName string) claim {
	return func(tx store.Tx) (*Result, error) {
		job.Retry = false
		found, err := loadExisting(tx, inst.ID)
		if err != nil {
			return nil, err
		}
		if found != nil && !retriable(req, inst.Parameters, found) {
			return repeatProvision(req, inst.Parameters, found)
		}
		if specName != "" {
			mark, err := store.GetSpecMark(tx, inst.ServiceID)
			if store.IsNotFound(err) || (err == nil && mark.Marked) {
				return nil, removedError(specName, inst.ServiceID, "it was removed from its registry while this request was checked")
			}
			if err != nil {
				return nil, err
			}
		}
		if found != nil {
			// A retry: the failed attempt's record and job make way.
			job.Retry = true
			inst.CreatedAt = found.inst.CreatedAt
			if err := store.DeleteJob(tx, found.inst.Job); err != nil {
				return nil, err
			}
		}
		if err := store.DeleteGone(tx, store.GoneInstanceKey(inst.ID)); err != nil {
			return nil, err
		}
		return nil, store.PutInstance(tx, inst)
	}
}

// retriable reports whether a provision request repeats a provision that
// failed and may run again.
func retriable(req ProvisionRequest, params []byte, e *existing) bool {
	return e.inst.State == store.InstanceFailed && e.inst.Lock == "" && sameProvision(req, params, e.inst)
}

func sameProvision(req ProvisionRequest, params []byte, inst *store.Instance) bool {
	return inst.ServiceID == req.ServiceID && inst.PlanID == req.PlanID && sameJSON(inst.Parameters, params) &&
		inst.OrganizationGUID == req.OrganizationGUID && inst.SpaceGUID == req.SpaceGUID
}

func removedError(name, serviceID, reason string) *Error {
	return badRequest("service %q (%s) was removed from the catalog (%s): it accepts no new provisions; existing instances can still be updated, bound and deprovisioned",
		name, serviceID, reason)
}

// repeatOfExisting answers a provision of an instance that exists when the
// provision could not run now (its spec is unknown or removed, or the
// request does not allow the asynchronous answer it needs); ok is false
// when the instance does not exist.
func (s *Service) repeatOfExisting(ctx context.Context, req ProvisionRequest, params []byte) (Result, bool, error) {
	var found *existing
	err := s.view(ctx, func(tx store.Tx) error {
		var err error
		found, err = loadExisting(tx, req.InstanceID)
		return err
	})
	if err != nil {
		return Result{}, false, err
	}
	if found == nil {
		return Result{}, false, nil
	}
	if retriable(req, params, found) {
		return Result{}, false, nil // answered as a new provision would be
	}
	res, err := repeatProvision(req, params, found)
	if err != nil {
		return Result{}, true, err
	}
	return *res, true, nil
}

// repeatProvision answers a provision of an instance that exists.
func repeatProvision(req ProvisionRequest, params []byte, e *existing) (*Result, error) {
	inst := e.inst
	if !sameProvision(req, params, inst) {
		return nil, errorf(Conflict, "", "instance %s already exists with other attributes (service_id, plan_id, parameters, organization or space): deprovision it first, or use another instance id", inst.ID)
	}
	if e.busy != nil {
		return nil, e.busy
	}
	switch inst.State {
	case store.InstanceProvisioned:
		return &Result{Status: OK, DashboardURL: inst.DashboardURL}, nil
	case store.InstanceProvisioning:
		return inProgress(req.Common, inst.Job, "instance "+inst.ID+" is being provisioned")
	default:
		why := ""
		if e.job != nil && e.job.Description != "" {
			why = " (" + e.job.Description + ")"
		}
		return nil, errorf(Conflict, "", "instance %s exists but its provision failed%s: deprovision it before provisioning it again", inst.ID, why)
	}
}
