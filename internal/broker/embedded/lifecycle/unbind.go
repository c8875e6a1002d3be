package lifecycle

import (
	"context"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded/store"
)

// Unbind deletes a binding.
func (s *Service) Unbind(ctx context.Context, req UnbindRequest) (Result, error) {
	if err := s.checkStoredID(ctx, "instance_id", req.InstanceID, store.InstanceKey(req.InstanceID)); err != nil {
		return Result{}, err
	}
	if err := s.checkStoredID(ctx, "binding_id", req.BindingID, store.BindingKey(req.InstanceID, req.BindingID)); err != nil {
		return Result{}, err
	}
	if req.ServiceID == "" || req.PlanID == "" {
		return Result{}, badRequest("the service_id and plan_id query parameters are required")
	}
	var inst *store.Instance
	var b *store.Binding
	if err := s.view(ctx, func(tx store.Tx) error {
		var err error
		if inst, err = store.GetInstance(tx, req.InstanceID); store.IsNotFound(err) {
			return errorf(Gone, "", "binding %s does not exist (nor does instance %s)", req.BindingID, req.InstanceID)
		} else if err != nil {
			return err
		}
		if b, err = store.GetBinding(tx, req.InstanceID, req.BindingID); store.IsNotFound(err) {
			return errorf(Gone, "", "binding %s of instance %s does not exist", req.BindingID, req.InstanceID)
		}
		return err
	}); err != nil {
		return Result{}, err
	}
	if b.ServiceID != req.ServiceID || b.PlanID != req.PlanID {
		return Result{}, badRequest("service_id %q and plan_id %q do not match binding %s (service_id %q, plan_id %q)",
			req.ServiceID, req.PlanID, b.ID, b.ServiceID, b.PlanID)
	}
	entry, err := s.specOf(inst)
	if err != nil {
		return Result{}, s.beforeSpec(ctx, inst, store.Unbind, err)
	}
	job := s.newJob(store.Unbind, inst.ID, b.ID, req.Common, store.JobRequest{
		ServiceID: b.ServiceID, PlanID: b.PlanID, Parameters: b.Parameters, Context: b.Context,
		BindResource: b.BindResource, AppGUID: b.AppGUID,
		OrganizationGUID: inst.OrganizationGUID, SpaceGUID: inst.SpaceGUID,
	})
	return s.mutate(ctx, req.Common, job, OK, func(tx store.Tx) (*Result, error) {
		cur, err := store.GetBinding(tx, inst.ID, b.ID)
		if store.IsNotFound(err) {
			return nil, errorf(Gone, "", "binding %s of instance %s does not exist", b.ID, inst.ID)
		}
		if err != nil {
			return nil, err
		}
		if cur.State == store.BindingCreating {
			return nil, concurrency("binding %s is still being created (operation %s): unbind it when that is done", cur.ID, cur.Job)
		}
		if j, err := store.GetJob(tx, cur.Job); err == nil && j.Method == store.Unbind && !j.State.Finished() {
			return inProgress(req.Common, j.Token, "binding "+cur.ID+" is already being unbound")
		}
		ci, err := store.GetInstance(tx, inst.ID)
		if err != nil {
			return nil, err
		}
		if ci.Lock != "" {
			return nil, busy(tx, ci)
		}
		if err := requireAsync(req.Common, entry.Spec, ci.PlanID); err != nil {
			return nil, err
		}
		// The binding's latest operation becomes its unbind; the instance
		// is only locked.
		if err := deleteIfFinished(tx, cur.Job); err != nil {
			return nil, err
		}
		cur.Job = job.Token
		ci.Lock, ci.UpdatedAt = job.Token, s.opts.Clock.Now()
		if err := store.PutBinding(tx, cur); err != nil {
			return nil, err
		}
		return nil, store.PutInstance(tx, ci)
	})
}
