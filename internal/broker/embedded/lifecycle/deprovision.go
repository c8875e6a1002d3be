package lifecycle

import (
	"context"
	"sort"
	"strings"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded/store"
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
		if inst, err = reloadInstance(tx, req.InstanceID, Gone); err != nil {
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
	return s.mutate(ctx, req.Common, job, OK, func(tx store.Tx) (*Result, error) {
		cur, err := reloadInstance(tx, inst.ID, Gone)
		if err != nil {
			return nil, err
		}
		if cur.Lock != "" {
			same := func(lj *store.Job) bool { return lj.Method == store.Deprovision }
			return repeatOrBusy(tx, req.Common, cur, same, "instance "+cur.ID+" is already being deprovisioned")
		}
		bindings, err := store.ListBindings(tx, cur.ID)
		if err != nil {
			return nil, err
		}
		if len(bindings) > 0 {
			ids := make([]string, 0, len(bindings))
			for _, b := range bindings {
				ids = append(ids, b.ID)
			}
			sort.Strings(ids)
			return nil, errorf(Unprocessable, "", "instance %s still has %d binding(s) (%s): unbind them before deprovisioning", cur.ID, len(ids), strings.Join(ids, ", "))
		}
		if err := requireAsync(req.Common, entry.Spec, cur.PlanID); err != nil {
			return nil, err
		}
		return nil, s.takeInstance(tx, cur, job)
	})
}

// forget deletes the records of an instance whose provision never ran (or
// was refused), and remembers that it is gone.
func (s *Service) forget(ctx context.Context, inst *store.Instance) (Result, error) {
	err := s.update(ctx, func(tx store.Tx) error {
		cur, err := reloadInstance(tx, inst.ID, Gone)
		if err != nil {
			return err
		}
		if cur.Lock != "" {
			return busy(tx, cur)
		}
		if err := store.PutGone(tx, store.GoneInstanceKey(cur.ID), &store.Gone{Job: cur.Job, DeletedAt: s.opts.Clock.Now()}); err != nil {
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
