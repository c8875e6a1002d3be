package lifecycle

import (
	"context"

	"github.com/lockstep-dev/lockstep/internal/osb/store"
)

// InstanceLastOperation reports an instance operation: the one named, or
// the instance's latest. 410 once the instance is gone (a finished
// deprovision).
func (s *Service) InstanceLastOperation(ctx context.Context, req LastOperationRequest) (LastOperation, error) {
	var out LastOperation
	err := s.view(ctx, func(tx store.Tx) error {
		inst, err := store.GetInstance(tx, req.InstanceID)
		if store.IsNotFound(err) {
			return errorf(Gone, "", "instance %s does not exist (deprovisioned, or never provisioned)", req.InstanceID)
		}
		if err != nil {
			return err
		}
		j, err := pickJob(tx, req.Operation, inst.Job, func(j *store.Job) bool {
			return j.InstanceID == inst.ID && j.BindingID == ""
		}, "instance "+inst.ID)
		if err != nil {
			return err
		}
		out = lastOperation(j, inst)
		return nil
	})
	return out, err
}

// BindingLastOperation reports a binding operation. 410 once the binding is
// gone (a finished unbind).
func (s *Service) BindingLastOperation(ctx context.Context, req LastOperationRequest) (LastOperation, error) {
	var out LastOperation
	err := s.view(ctx, func(tx store.Tx) error {
		b, err := store.GetBinding(tx, req.InstanceID, req.BindingID)
		if store.IsNotFound(err) {
			return errorf(Gone, "", "binding %s of instance %s does not exist (unbound, or never bound)", req.BindingID, req.InstanceID)
		}
		if err != nil {
			return err
		}
		j, err := pickJob(tx, req.Operation, b.Job, func(j *store.Job) bool {
			return j.InstanceID == b.InstanceID && j.BindingID == b.ID
		}, "binding "+b.ID)
		if err != nil {
			return err
		}
		out = lastOperation(j, nil)
		return nil
	})
	return out, err
}

func pickJob(tx store.Tx, asked, latest string, belongs func(*store.Job) bool, what string) (*store.Job, error) {
	token := latest
	if asked != "" {
		token = asked
	}
	j, err := store.GetJob(tx, token)
	if store.IsNotFound(err) || (err == nil && !belongs(j)) {
		if asked != "" {
			return nil, badRequest("operation %q is not an operation of %s that the broker remembers (its latest is %q)", asked, what, latest)
		}
		return nil, internal("the latest operation %q of %s is missing from the broker's store", latest, what)
	}
	return j, err
}

func lastOperation(j *store.Job, inst *store.Instance) LastOperation {
	out := LastOperation{Description: j.Description}
	switch j.State {
	case store.JobSucceeded:
		out.State = "succeeded"
	case store.JobFailed:
		out.State = "failed"
		if inst != nil && (j.Method == store.Update || j.Method == store.Deprovision) {
			usable := inst.State == store.InstanceProvisioned
			out.InstanceUsable = &usable
		}
		if j.Method == store.Update {
			repeatable := true
			out.UpdateRepeatable = &repeatable
		}
	default:
		out.State = "in progress"
		if j.State == store.JobPending {
			out.Description = "waiting for the broker to load the service's spec from its registries"
		} else {
			out.Description = string(j.Method) + " in progress"
		}
	}
	return out
}
