package lifecycle

import (
	"context"
	"sort"
	"strings"

	"github.com/lockstep-dev/lockstep/internal/osb/store"
)

// Deprovision deletes an instance; on success everything it owned (bundle
// state, jobs) is gone.
func (s *Service) Deprovision(ctx context.Context, req DeprovisionRequest) (Result, error) {
	if err := s.checkStoredID(ctx, "instance_id", req.InstanceID, store.InstanceKey(req.InstanceID)); err != nil {
		return Result{}, err
	}
	if req.ServiceID == "" || req.PlanID == "" {
		return Result{}, badRequest("the service_id and plan_id query parameters are required")
	}
	var inst *store.Instance
	var last *store.Job
	if err := s.view(ctx, func(tx store.Tx) error {
		var err error
		inst, err = store.GetInstance(tx, req.InstanceID)
		if store.IsNotFound(err) {
			return errorf(Gone, "", "instance %s does not exist", req.InstanceID)
		}
		if err != nil {
			return err
		}
		if last, err = store.GetJob(tx, inst.Job); store.IsNotFound(err) {
			err = nil
		}
		return err
	}); err != nil {
		return Result{}, err
	}
	if inst.ServiceID != req.ServiceID || inst.PlanID != req.PlanID {
		return Result{}, badRequest("service_id %q and plan_id %q do not match instance %s (service_id %q, plan_id %q)",
			req.ServiceID, req.PlanID, inst.ID, inst.ServiceID, inst.PlanID)
	}
	// A provision that failed before its action ran (its spec never came,
	// its parameters did not fit the spec), or that its action refused,
	// left nothing to undo.
	if inst.State == store.InstanceFailed && inst.Lock == "" && last != nil && last.Method == store.Provision && (!last.ActionRan || last.Refused) {
		return s.forget(ctx, inst)
	}
	entry, known := s.opts.Catalog.Lookup(inst.ServiceID)
	if !known {
		_, err := s.specOf(inst)
		return Result{}, s.beforeSpec(ctx, inst, store.Deprovision, err)
	}

	job := s.newJob(store.Deprovision, inst.ID, "", req.Common, store.JobRequest{
		ServiceID: inst.ServiceID, PlanID: inst.PlanID, Parameters: inst.Parameters, Context: inst.Context,
		OrganizationGUID: inst.OrganizationGUID, SpaceGUID: inst.SpaceGUID,
	})
	var repeat *Result
	err := s.update(ctx, func(tx store.Tx) error {
		repeat = nil
		cur, err := store.GetInstance(tx, inst.ID)
		if store.IsNotFound(err) {
			return errorf(Gone, "", "instance %s does not exist", inst.ID)
		}
		if err != nil {
			return err
		}
		if cur.Lock != "" {
			lj, err := store.GetJob(tx, cur.Lock)
			if err == nil && lj.Method == store.Deprovision {
				if !req.AcceptsIncomplete {
					return concurrency("instance %s is already being deprovisioned (operation %s): send accepts_incomplete=true to follow it, or retry when it is done", cur.ID, lj.Token)
				}
				repeat = &Result{Status: Accepted, Operation: lj.Token}
				return nil
			}
			return busy(tx, cur)
		}
		bindings, err := store.ListBindings(tx, cur.ID)
		if err != nil {
			return err
		}
		if len(bindings) > 0 {
			ids := make([]string, 0, len(bindings))
			for _, b := range bindings {
				ids = append(ids, b.ID)
			}
			sort.Strings(ids)
			return errorf(Unprocessable, "", "instance %s still has %d binding(s) (%s): unbind them before deprovisioning", cur.ID, len(ids), strings.Join(ids, ", "))
		}
		if entry.Spec.Asynchronous(cur.PlanID) && !req.AcceptsIncomplete {
			return asyncRequired("service %q runs its actions asynchronously: send accepts_incomplete=true", entry.Spec.Name())
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

// forget deletes the records of an instance whose provision never ran (or
// was refused), and remembers that it is gone.
func (s *Service) forget(ctx context.Context, inst *store.Instance) (Result, error) {
	err := s.update(ctx, func(tx store.Tx) error {
		cur, err := store.GetInstance(tx, inst.ID)
		if store.IsNotFound(err) {
			return errorf(Gone, "", "instance %s does not exist", inst.ID)
		}
		if err != nil {
			return err
		}
		if cur.Lock != "" {
			return busy(tx, cur)
		}
		if err := store.PutGone(tx, store.GoneInstanceKey(cur.ID), &store.Gone{Job: cur.Job, DeletedAt: s.opts.Now()}); err != nil {
			return err
		}
		return deleteUnused(tx, cur)
	})
	if err != nil {
		return Result{}, err
	}
	s.opts.Logger.Info("instance forgotten: its provision never ran", "instance", inst.ID)
	return Result{Status: OK}, nil
}
