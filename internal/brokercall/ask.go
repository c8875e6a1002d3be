package brokercall

import (
	"context"

	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
	"github.com/lockstep-dev/lockstep/internal/broker/osbclient"
)

// Learned is what the broker told of an operation whose end lockstep did
// not know yet.
type Learned string

const (
	// StillRunning: the broker is still at work on it.
	StillRunning Learned = "still running"
	// CarriedOut: the broker carried it out.
	CarriedOut Learned = "carried out"
	// NotCarriedOut: the broker did not carry it out (it failed, or the
	// broker still holds what a delete was to remove).
	NotCarriedOut Learned = "not carried out"
	// CannotTell: the broker answered, but what it says does not tell
	// whether it carried the operation out (last_operation without an
	// operation key speaks of the object's latest operation, which may be
	// an earlier one; a broker that does not serve last_operation).
	CannotTell Learned = "cannot tell"
	// NoAnswer: the broker did not answer: ask again later.
	NoAnswer Learned = "no answer"
)

// Learn asks the broker how the operation req names ended: last_operation
// (with operationKey when the broker gave one), and, for a delete whose
// last_operation does not tell, a fetch of the object where the catalog
// allows one (gone: carried out; still there: not). accepted says that the
// broker accepted the operation (202): last_operation then speaks of it,
// with or without a key; otherwise (the request got no answer) a final
// state may speak of an earlier operation. The last_operation answer,
// when there is one, is returned too (for its description and
// Retry-After).
func (p *Protocol) Learn(ctx context.Context, req Request, operationKey string, accepted bool, requestID string) (Learned, *osbclient.LastOperation, error) {
	meta := req.Who.meta(requestID)
	last, err := p.lastOperation(ctx, req, meta, operationKey)
	switch {
	case err != nil && Unanswered(err):
		return NoAnswer, nil, err
	case err == nil && last.Gone && req.deletes():
		return CarriedOut, last, nil
	case err == nil && last.Gone:
		return NotCarriedOut, last, nil
	case err == nil && !last.State.Final():
		return StillRunning, last, nil
	case err == nil && accepted:
		if last.State == osbapi.StateSucceeded {
			return CarriedOut, last, nil
		}
		return NotCarriedOut, last, nil
	}
	// A final state of a request that got no answer, or a broker that
	// refuses last_operation: only the object itself tells, for a delete.
	if !req.deletes() || !req.Retrievable {
		return CannotTell, last, err
	}
	held, ferr := p.holds(ctx, req, meta)
	switch {
	case ferr != nil && Unanswered(ferr):
		return NoAnswer, last, ferr
	case ferr != nil:
		return CannotTell, last, ferr
	case held:
		return NotCarriedOut, last, nil
	}
	return CarriedOut, last, nil
}

// LastOperation asks the broker once about the operation req names, with
// operationKey when the broker gave one.
func (p *Protocol) LastOperation(ctx context.Context, req Request, operationKey, requestID string) (*osbclient.LastOperation, error) {
	return p.lastOperation(ctx, req, req.Who.meta(requestID), operationKey)
}

func (p *Protocol) lastOperation(ctx context.Context, req Request, meta osbclient.RequestMeta, operationKey string) (*osbclient.LastOperation, error) {
	if req.BindingID != "" {
		return req.Client.BindingLastOperation(ctx, meta, osbclient.BindingLastOperationRequest{InstanceID: req.InstanceID, BindingID: req.BindingID,
			ServiceID: req.ServiceID, PlanID: req.PlanID, Operation: operationKey})
	}
	return req.Client.InstanceLastOperation(ctx, meta, osbclient.InstanceLastOperationRequest{InstanceID: req.InstanceID,
		ServiceID: req.ServiceID, PlanID: req.pollPlanID(), Operation: operationKey})
}

// holds reports whether the broker still holds req's object (GET; 404 and
// 410 say it does not).
func (p *Protocol) holds(ctx context.Context, req Request, meta osbclient.RequestMeta) (bool, error) {
	_, err := p.fetch(ctx, req, meta)
	if osbclient.IsNotFound(err) || osbclient.IsGone(err) {
		return false, nil
	}
	return err == nil, err
}

// Credentials reads a binding's credentials once (a broker answers 404
// while an asynchronous bind is not ready: osbclient.IsNotFound).
func (p *Protocol) Credentials(ctx context.Context, req Request, requestID string) (map[string]any, error) {
	held, err := p.Fetch(ctx, req, requestID)
	if err != nil {
		return nil, err
	}
	return held.Binding.Credentials, nil
}
