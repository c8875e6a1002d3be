package jobs

import (
	"encoding/json"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded/executor"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/store"
)

// applyOutcome writes a finished job and what it means for its instance or
// binding, and releases the instance's lock. j.State is final.
func applyOutcome(tx store.Tx, j *store.Job, res executor.Result) error {
	ok := j.State == store.JobSucceeded
	inst, err := store.GetInstance(tx, j.InstanceID)
	if store.IsNotFound(err) {
		return store.PutJob(tx, j)
	}
	if err != nil {
		return err
	}
	if inst.Lock == j.Token {
		inst.Lock = ""
	}
	inst.UpdatedAt = j.FinishedAt

	if ok && j.Method == store.Deprovision {
		return deleteInstance(tx, inst, j.Token)
	}
	if len(res.StateUpdates) > 0 {
		state, err := store.GetState(tx, inst.ID)
		if err != nil {
			return err
		}
		if err := store.PutState(tx, inst.ID, executor.MergeState(state, res.StateUpdates)); err != nil {
			return err
		}
	}

	switch j.Method {
	case store.Provision:
		if ok {
			inst.State = store.InstanceProvisioned
			inst.DashboardURL = res.Output.DashboardURL
		} else {
			inst.State = store.InstanceFailed
		}
	case store.Update:
		if ok {
			req := j.Request
			inst.PlanID = req.PlanID
			inst.Parameters = req.Parameters
			if req.Context != nil {
				inst.Context = req.Context
			}
			if res.Output.DashboardURL != "" {
				inst.DashboardURL = res.Output.DashboardURL
			}
		}
	case store.Bind, store.Unbind:
		if err := applyBinding(tx, j, ok, res); err != nil {
			return err
		}
		if ok && j.Method == store.Unbind {
			if err := store.DeleteJob(tx, j.Token); err != nil {
				return err
			}
			gone := &store.Gone{Job: j.Token, DeletedAt: j.FinishedAt}
			if err := store.PutGone(tx, store.GoneBindingKey(j.InstanceID, j.BindingID), gone); err != nil {
				return err
			}
			return store.PutInstance(tx, inst)
		}
	}
	if err := store.PutInstance(tx, inst); err != nil {
		return err
	}
	return store.PutJob(tx, j)
}

func applyBinding(tx store.Tx, j *store.Job, ok bool, res executor.Result) error {
	b, err := store.GetBinding(tx, j.InstanceID, j.BindingID)
	if store.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if b.Job != j.Token {
		return nil
	}
	switch {
	case j.Method == store.Unbind && ok:
		return store.DeleteBinding(tx, b.InstanceID, b.ID)
	case j.Method == store.Unbind:
		return nil // the binding stays as it was
	case ok:
		b.State = store.BindingBound
		b.Credentials = res.Output.Credentials
		if len(b.Credentials) == 0 {
			b.Credentials = json.RawMessage(`{}`)
		}
	default:
		b.State = store.BindingFailed
	}
	return store.PutBinding(tx, b)
}

// deleteInstance removes a deprovisioned instance with everything it owns:
// its bundle state, its bindings and their jobs, and its jobs.
func deleteInstance(tx store.Tx, inst *store.Instance, token string) error {
	bindings, err := store.ListBindings(tx, inst.ID)
	if err != nil {
		return err
	}
	for _, b := range bindings {
		if err := store.DeleteJob(tx, b.Job); err != nil {
			return err
		}
		if err := store.DeleteBinding(tx, b.InstanceID, b.ID); err != nil {
			return err
		}
	}
	for _, t := range []string{inst.Job, token} {
		if err := store.DeleteJob(tx, t); err != nil {
			return err
		}
	}
	if err := store.DeleteState(tx, inst.ID); err != nil {
		return err
	}
	if err := store.PutGone(tx, store.GoneInstanceKey(inst.ID), &store.Gone{Job: token, DeletedAt: inst.UpdatedAt}); err != nil {
		return err
	}
	return store.DeleteInstance(tx, inst.ID)
}
