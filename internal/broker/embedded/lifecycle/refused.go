package lifecycle

import (
	"context"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded/store"
)

// refused answers a job whose action refused the request while the request
// waited for it. The action changed nothing, so the answer is a 4xx, and
// the broker keeps nothing of the request either: a refused provision
// leaves no instance and a refused bind no binding (repeating the request
// asks again). Provision, update and bind answer 400; deprovision and
// unbind 422, since their request was well formed but cannot be carried
// out now.
func (s *Service) refused(ctx context.Context, j *store.Job) error {
	kind := BadRequest
	if j.Method == store.Deprovision || j.Method == store.Unbind {
		kind = Unprocessable
	}
	answer := errorf(kind, CodeActionRefused, "%s", j.Description)
	var err error
	switch j.Method {
	case store.Provision:
		err = s.update(ctx, func(tx store.Tx) error {
			inst, err := store.GetInstance(tx, j.InstanceID)
			if store.IsNotFound(err) {
				return nil
			}
			if err != nil {
				return err
			}
			if inst.Job != j.Token || inst.Lock != "" || inst.State != store.InstanceFailed {
				return nil // a later request took it over
			}
			return deleteUnused(tx, inst)
		})
	case store.Bind:
		err = s.update(ctx, func(tx store.Tx) error {
			b, err := store.GetBinding(tx, j.InstanceID, j.BindingID)
			if store.IsNotFound(err) {
				return nil
			}
			if err != nil {
				return err
			}
			if b.Job != j.Token || b.State != store.BindingFailed {
				return nil
			}
			if err := store.DeleteJob(tx, j.Token); err != nil {
				return err
			}
			return store.DeleteBinding(tx, b.InstanceID, b.ID)
		})
	}
	if err != nil {
		s.opts.Logger.Warn("forget a refused request", "operation", j.Token, "error", err)
	}
	return answer
}

// deleteUnused deletes an instance that holds nothing (its provision never
// ran, or was refused) with its job and bundle state.
func deleteUnused(tx store.Tx, inst *store.Instance) error {
	if err := store.DeleteJob(tx, inst.Job); err != nil {
		return err
	}
	if err := store.DeleteState(tx, inst.ID); err != nil {
		return err
	}
	return store.DeleteInstance(tx, inst.ID)
}
