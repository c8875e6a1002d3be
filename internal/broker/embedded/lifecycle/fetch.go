package lifecycle

import (
	"context"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded/store"
	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
)

// GetInstance answers GET of an instance: 404 while it is provisioned (or
// when its provision failed), 422 ConcurrencyError while it is updated.
// Bundle state is never part of it.
func (s *Service) GetInstance(ctx context.Context, instanceID string) (osbapi.GetInstanceResponse, error) {
	var view osbapi.GetInstanceResponse
	if err := s.checkStoredID(ctx, "instance_id", instanceID, store.InstanceKey(instanceID)); err != nil {
		return view, err
	}
	err := s.view(ctx, func(tx store.Tx) error {
		inst, err := store.GetInstance(tx, instanceID)
		if store.IsNotFound(err) {
			return errorf(NotFound, "", "instance %s does not exist", instanceID)
		}
		if err != nil {
			return err
		}
		switch inst.State {
		case store.InstanceProvisioning:
			return errorf(NotFound, "", "instance %s is still being provisioned (operation %s)", inst.ID, inst.Job)
		case store.InstanceFailed:
			return errorf(NotFound, "", "instance %s does not exist: its provision failed (operation %s)", inst.ID, inst.Job)
		}
		if inst.Lock != "" {
			if j, err := store.GetJob(tx, inst.Lock); err == nil && j.Method == store.Update {
				return concurrency("instance %s is being updated (operation %s): fetch it when that is done", inst.ID, j.Token)
			}
		}
		view = osbapi.GetInstanceResponse{ServiceID: inst.ServiceID, PlanID: inst.PlanID, DashboardURL: inst.DashboardURL, Parameters: inst.Parameters}
		return nil
	})
	return view, err
}

// GetBinding answers GET of a binding: 404 while the bind is in progress
// (or failed), the credentials once it is done.
func (s *Service) GetBinding(ctx context.Context, instanceID, bindingID string) (osbapi.Binding, error) {
	var view osbapi.Binding
	if err := s.checkStoredID(ctx, "instance_id", instanceID, store.InstanceKey(instanceID)); err != nil {
		return view, err
	}
	if err := s.checkStoredID(ctx, "binding_id", bindingID, store.BindingKey(instanceID, bindingID)); err != nil {
		return view, err
	}
	err := s.view(ctx, func(tx store.Tx) error {
		b, err := store.GetBinding(tx, instanceID, bindingID)
		if store.IsNotFound(err) {
			return errorf(NotFound, "", "binding %s of instance %s does not exist", bindingID, instanceID)
		}
		if err != nil {
			return err
		}
		switch b.State {
		case store.BindingCreating:
			return errorf(NotFound, "", "binding %s is still being created (operation %s)", b.ID, b.Job)
		case store.BindingFailed:
			return errorf(NotFound, "", "binding %s does not exist: its bind failed", b.ID)
		}
		view = osbapi.Binding{Credentials: credentialsOf(b.Credentials), Parameters: b.Parameters}
		return nil
	})
	return view, err
}
