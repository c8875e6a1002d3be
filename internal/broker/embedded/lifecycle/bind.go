package lifecycle

import (
	"context"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded/bundle"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/store"
)

// Bind creates a binding. The binding record references the job that
// creates it: an identical repeat answers 200 with the credentials once it
// is done, 202 with the same operation while it runs; a different one 409.
func (s *Service) Bind(ctx context.Context, req BindRequest) (Result, error) {
	if err := checkID("instance_id", req.InstanceID); err != nil {
		return Result{}, err
	}
	if err := checkID("binding_id", req.BindingID); err != nil {
		return Result{}, err
	}
	if req.ServiceID == "" || req.PlanID == "" {
		return Result{}, badRequest("service_id and plan_id are required")
	}
	params, err := objectOrEmpty("parameters", req.Parameters)
	if err != nil {
		return Result{}, err
	}
	bindResource, err := optionalObject("bind_resource", req.BindResource)
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
	if inst.ServiceID != req.ServiceID || inst.PlanID != req.PlanID {
		return Result{}, badRequest("service_id %q and plan_id %q do not match instance %s (service_id %q, plan_id %q)",
			req.ServiceID, req.PlanID, inst.ID, inst.ServiceID, inst.PlanID)
	}
	entry, err := s.specOf(inst)
	if err != nil {
		return Result{}, s.beforeSpec(ctx, inst, store.Bind, err)
	}
	spec := entry.Spec
	if !spec.Bindable(inst.PlanID) {
		return Result{}, badRequest("plan %q of service %q is not bindable", inst.PlanID, spec.Name())
	}

	want := &store.Binding{
		InstanceID: inst.ID, ID: req.BindingID, ServiceID: req.ServiceID, PlanID: req.PlanID,
		Parameters: params, BindResource: bindResource, Context: reqContext, AppGUID: req.AppGUID,
		State: store.BindingCreating, CreatedAt: s.opts.Clock.Now(),
	}
	job := s.newJob(store.Bind, inst.ID, req.BindingID, req.Common, store.JobRequest{
		ServiceID: req.ServiceID, PlanID: req.PlanID, Parameters: params, Context: reqContext,
		BindResource: bindResource, AppGUID: req.AppGUID,
		OrganizationGUID: inst.OrganizationGUID, SpaceGUID: inst.SpaceGUID,
	})
	want.Job = job.Token
	var validated bool
	return s.mutate(ctx, req.Common, job, Created, func(tx store.Tx) (*Result, error) {
		b, err := store.GetBinding(tx, inst.ID, req.BindingID)
		switch {
		case err == nil:
			return repeatBind(tx, req, want, b)
		case !store.IsNotFound(err):
			return nil, err
		}
		if !validated {
			// A plan removed from its bundle took its bind schema with it:
			// the parameters go to the bind action as they are.
			if _, ok := spec.Plan(inst.PlanID); ok {
				if err := spec.ValidateParameters(inst.PlanID, bundle.BindSchema, params); err != nil {
					return nil, badRequest("%v", err)
				}
			}
			validated = true
		}
		cur, err := reloadInstance(tx, inst.ID, NotFound)
		if err != nil {
			return nil, err
		}
		switch {
		case cur.State == store.InstanceProvisioning:
			return nil, concurrency("instance %s is still being provisioned (operation %s): bind it when that is done", cur.ID, cur.Job)
		case cur.State == store.InstanceFailed:
			return nil, errorf(Unprocessable, "", "instance %s failed to provision: it cannot be bound", cur.ID)
		case cur.Lock != "":
			return nil, busy(tx, cur)
		}
		if err := requireAsync(req.Common, spec, cur.PlanID); err != nil {
			return nil, err
		}
		// The binding's own job is its bind; the instance is only locked.
		cur.Lock, cur.UpdatedAt = job.Token, s.opts.Clock.Now()
		if err := store.PutInstance(tx, cur); err != nil {
			return nil, err
		}
		return nil, store.PutBinding(tx, want)
	})
}

// repeatBind answers a bind of a binding that exists.
func repeatBind(tx store.Tx, req BindRequest, want, b *store.Binding) (*Result, error) {
	same := b.ServiceID == want.ServiceID && b.PlanID == want.PlanID && sameJSON(b.Parameters, want.Parameters) &&
		sameJSON(b.BindResource, want.BindResource) && b.AppGUID == want.AppGUID
	if !same {
		return nil, errorf(Conflict, "", "binding %s of instance %s already exists with other parameters: unbind it first, or use another binding id", b.ID, b.InstanceID)
	}
	j, err := store.GetJob(tx, b.Job)
	if err != nil && !store.IsNotFound(err) {
		return nil, err
	}
	switch b.State {
	case store.BindingCreating:
		return inProgress(req.Common, b.Job, "binding "+b.ID+" is being created")
	case store.BindingFailed:
		why := ""
		if j != nil && j.Method == store.Bind && j.Description != "" {
			why = " (" + j.Description + ")"
		}
		return nil, errorf(Conflict, "", "binding %s exists but its bind failed%s: unbind it before binding again", b.ID, why)
	}
	if j != nil && j.Method == store.Unbind && !j.State.Finished() {
		return nil, concurrency("binding %s is being unbound (operation %s)", b.ID, j.Token)
	}
	return &Result{Status: OK, Credentials: credentialsOf(b.Credentials)}, nil
}
