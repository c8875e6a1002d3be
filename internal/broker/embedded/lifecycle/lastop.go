package lifecycle

import (
	"context"
	"time"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded/store"
	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
)

// InstanceLastOperation reports an instance operation: the one named, or
// the instance's latest. 410 once the instance is gone (a finished
// deprovision).
func (s *Service) InstanceLastOperation(ctx context.Context, req LastOperationRequest) (osbapi.LastOperationResponse, error) {
	var out osbapi.LastOperationResponse
	if err := s.checkLastOperationIDs(ctx, req); err != nil {
		return out, err
	}
	err := s.view(ctx, func(tx store.Tx) error {
		inst, err := store.GetInstance(tx, req.InstanceID)
		if store.IsNotFound(err) {
			return goneOrUnknown(tx, store.GoneInstanceKey(req.InstanceID), "instance "+req.InstanceID, "deprovisioned")
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
func (s *Service) BindingLastOperation(ctx context.Context, req LastOperationRequest) (osbapi.LastOperationResponse, error) {
	var out osbapi.LastOperationResponse
	if err := s.checkLastOperationIDs(ctx, req); err != nil {
		return out, err
	}
	err := s.view(ctx, func(tx store.Tx) error {
		b, err := store.GetBinding(tx, req.InstanceID, req.BindingID)
		if store.IsNotFound(err) {
			return goneOrUnknown(tx, store.GoneBindingKey(req.InstanceID, req.BindingID),
				"binding "+req.BindingID+" of instance "+req.InstanceID, "unbound")
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

// checkLastOperationIDs checks the identifiers of a last_operation request.
func (s *Service) checkLastOperationIDs(ctx context.Context, req LastOperationRequest) error {
	if err := s.checkStoredID(ctx, "instance_id", req.InstanceID, store.InstanceKey(req.InstanceID)); err != nil {
		return err
	}
	if req.BindingID != "" {
		if err := s.checkStoredID(ctx, "binding_id", req.BindingID, store.BindingKey(req.InstanceID, req.BindingID)); err != nil {
			return err
		}
	}
	if req.Operation != "" {
		return checkID("operation", req.Operation)
	}
	return nil
}

// goneOrUnknown answers last_operation for a record that does not exist:
// 410 Gone when the broker deleted it (the end of an asynchronous
// deprovision or unbind), 404 when it never knew it.
func goneOrUnknown(tx store.Tx, key, what, deleted string) error {
	g, err := store.GetGone(tx, key)
	switch {
	case err == nil:
		return errorf(Gone, "", "%s is gone: it was %s (operation %s, %s)", what, deleted, g.Job, g.DeletedAt.UTC().Format(time.RFC3339))
	case store.IsNotFound(err):
		return errorf(NotFound, "", "%s does not exist: the broker does not know it", what)
	default:
		return err
	}
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

func lastOperation(j *store.Job, inst *store.Instance) osbapi.LastOperationResponse {
	out := osbapi.LastOperationResponse{Description: j.Description}
	switch j.State {
	case store.JobSucceeded:
		out.State = osbapi.StateSucceeded
	case store.JobFailed:
		out.State = osbapi.StateFailed
		if inst != nil && (j.Method == store.Update || j.Method == store.Deprovision) {
			usable := inst.State == store.InstanceProvisioned
			if j.InstanceUsable != nil {
				usable = usable && *j.InstanceUsable
			}
			out.InstanceUsable = &usable
		}
		if j.Method == store.Update {
			// Repeating a refused update cannot help; a failed one may
			// succeed again, unless its action said otherwise.
			repeatable := !j.Refused
			if j.UpdateRepeatable != nil {
				repeatable = *j.UpdateRepeatable
			}
			out.UpdateRepeatable = &repeatable
		}
	default:
		out.State = osbapi.StateInProgress
		if j.State == store.JobPending {
			out.Description = "waiting for the broker to load the service's spec from its registries"
		} else {
			out.Description = string(j.Method) + " in progress"
		}
	}
	return out
}
