package brokercall

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
	"github.com/lockstep-dev/lockstep/internal/broker/osbclient"
	"github.com/lockstep-dev/lockstep/internal/tracing"
)

// ErrNotRetrievable is the error of an asynchronous bind at a broker that
// does not let lockstep read bindings: the credentials can never be read,
// so the bind is undone.
var ErrNotRetrievable = errors.New("the broker answered the bind asynchronously but does not let lockstep fetch bindings (bindings_retrievable is false), so its credentials cannot be read")

// Send makes the broker call of req without the lock or a record: for a
// caller that holds the object's lock through the record it completes
// (the operations reconciler's compensations). requestID is sent as
// X-Broker-API-Request-Identity. An asynchronous answer is polled until
// ctx ends.
func (p *Protocol) Send(ctx context.Context, req Request, requestID string) Result {
	return p.send(ctx, req, req.Who.meta(requestID))
}

// send makes the call in a lockstep.broker span, which says what the
// call came to.
func (p *Protocol) send(ctx context.Context, req Request, meta osbclient.RequestMeta) Result {
	ctx, span := tracing.Start(ctx, tracing.SpanBroker)
	defer span.End()
	if !span.IsRecording() {
		return p.call(ctx, req, meta)
	}
	span.SetAttributes(tracing.AttrVerb.String(string(req.Verb)), tracing.AttrBroker.String(req.Broker),
		tracing.AttrInstanceID.String(req.InstanceID), tracing.AttrBindingID.String(req.BindingID))
	res := p.call(ctx, req, meta)
	span.SetAttributes(tracing.AttrVerdict.String(string(res.Verdict)))
	if res.HTTPStatus != 0 {
		span.SetAttributes(tracing.AttrStatusCode.Int(res.HTTPStatus))
	}
	return res
}

func (p *Protocol) call(ctx context.Context, req Request, meta osbclient.RequestMeta) Result {
	c := req.Client
	switch req.Verb {
	case v1alpha1.VerbProvision:
		resp, err := c.Provision(ctx, meta, osbclient.ProvisionRequest{
			InstanceID: req.InstanceID, ServiceID: req.ServiceID, PlanID: req.PlanID,
			Context: p.context(req.Namespace, req.InstanceName), Parameters: req.Parameters,
		})
		if err != nil {
			return p.refusal(ctx, req, err)
		}
		res := Result{HTTPStatus: resp.HTTPStatus, DashboardURL: resp.DashboardURL}
		return p.follow(ctx, req, meta, res, resp.Async, resp.Operation)

	case v1alpha1.VerbUpdate:
		resp, err := c.Update(ctx, meta, p.updateRequest(req))
		if err != nil {
			return p.refusal(ctx, req, err)
		}
		res := Result{HTTPStatus: resp.HTTPStatus, DashboardURL: resp.DashboardURL}
		return p.follow(ctx, req, meta, res, resp.Async, resp.Operation)

	case v1alpha1.VerbDeprovision, v1alpha1.VerbUnbind:
		var (
			resp *osbclient.DeleteResponse
			err  error
		)
		if req.Verb == v1alpha1.VerbUnbind {
			resp, err = c.Unbind(ctx, meta, osbclient.UnbindRequest{InstanceID: req.InstanceID, BindingID: req.BindingID, ServiceID: req.ServiceID, PlanID: req.PlanID})
		} else {
			resp, err = c.Deprovision(ctx, meta, osbclient.DeprovisionRequest{InstanceID: req.InstanceID, ServiceID: req.ServiceID, PlanID: req.PlanID})
		}
		if err != nil {
			return p.refusal(ctx, req, err)
		}
		return p.follow(ctx, req, meta, Result{HTTPStatus: resp.HTTPStatus}, resp.Async, resp.Operation)

	case v1alpha1.VerbBind:
		resp, err := c.Bind(ctx, meta, osbclient.BindRequest{
			InstanceID: req.InstanceID, BindingID: req.BindingID, ServiceID: req.ServiceID, PlanID: req.PlanID,
			Context: p.context(req.Namespace, req.InstanceName), Parameters: req.Parameters,
		})
		if err != nil {
			return p.refusal(ctx, req, err)
		}
		res := Result{HTTPStatus: resp.HTTPStatus}
		if !resp.Async {
			return p.store(ctx, req, res, resp.Binding.Credentials)
		}
		res.Accepted, res.OperationKey = true, resp.Operation
		if !req.Retrievable {
			res.Verdict, res.Err, res.Undo = Refused, ErrNotRetrievable, ErrNotRetrievable.Error()
			return res
		}
		res = p.follow(ctx, req, meta, res, true, resp.Operation)
		if res.Verdict != Done {
			return res
		}
		creds, err := p.credentials(ctx, req, meta)
		if err != nil {
			// The broker bound; its credentials are still to come, or
			// could not be read now: the operations reconciler follows.
			res.Verdict, res.Err = Unknown, err
			if errors.Is(err, osbclient.ErrStillInProgress) {
				res.Verdict = Running
			}
			return res
		}
		return p.store(ctx, req, res, creds)

	case v1alpha1.VerbAdopt:
		return p.adopt(ctx, req, meta)
	}
	return Result{Verdict: Refused, Err: fmt.Errorf("%w: lockstep has no broker call for verb %q", osbclient.ErrInvalidRequest, req.Verb)}
}

// updateRequest is the PATCH of an update: the context, the previous
// values, plan_id only when the plan changes, and the parameters given.
func (p *Protocol) updateRequest(req Request) osbclient.UpdateRequest {
	ctxObj := p.context(req.Namespace, req.InstanceName)
	out := osbclient.UpdateRequest{
		InstanceID: req.InstanceID, ServiceID: req.ServiceID, Context: &ctxObj, Parameters: req.Parameters,
		PreviousValues: &osbapi.PreviousValues{ServiceID: req.ServiceID, PlanID: req.PreviousPlanID},
	}
	if !req.NewPlan && req.PreviousPlanID == "" {
		out.PreviousValues.PlanID = req.PlanID
	}
	if req.NewPlan {
		out.PlanID = req.PlanID
	}
	return out
}

// follow polls an accepted (202) operation within ctx; a synchronous
// answer is done at once.
func (p *Protocol) follow(ctx context.Context, req Request, meta osbclient.RequestMeta, res Result, async bool, operation string) Result {
	if !async {
		res.Verdict = Done
		return res
	}
	res.Accepted, res.OperationKey = true, operation
	opts := p.Poll
	opts.Deleting = req.deletes()
	var (
		last *osbclient.LastOperation
		err  error
	)
	if req.Kind == v1alpha1.KindServiceBinding {
		last, err = req.Client.PollBinding(ctx, meta, osbclient.BindingLastOperationRequest{InstanceID: req.InstanceID, BindingID: req.BindingID,
			ServiceID: req.ServiceID, PlanID: req.PlanID, Operation: operation}, opts)
	} else {
		last, err = req.Client.PollInstance(ctx, meta, osbclient.InstanceLastOperationRequest{InstanceID: req.InstanceID,
			ServiceID: req.ServiceID, PlanID: req.pollPlanID(), Operation: operation}, opts)
	}
	switch {
	case err == nil && last.State == osbapi.StateSucceeded:
		res.Verdict = Done
	case err == nil:
		res.Verdict, res.Failed = Refused, last
		res.Err = fmt.Errorf("the broker's operation failed: %s", describe(last.Description))
	case errors.Is(err, osbclient.ErrStillInProgress):
		res.Verdict, res.Err = Running, err
	default:
		// The broker accepted the change; how it ended is not known.
		res.Verdict, res.Err = Unknown, err
	}
	return res
}

// credentials reads a finished asynchronous binding's credentials; a
// broker answers 404 while the binding is not ready, so 404 means "ask
// again" until ctx ends (then the bind is still running).
func (p *Protocol) credentials(ctx context.Context, req Request, meta osbclient.RequestMeta) (map[string]any, error) {
	interval := max(p.Poll.MinInterval, 10*time.Millisecond)
	for {
		got, err := req.Client.GetBinding(ctx, meta, osbclient.GetBindingRequest{InstanceID: req.InstanceID, BindingID: req.BindingID,
			ServiceID: req.ServiceID, PlanID: req.PlanID})
		if err == nil {
			return got.Credentials, nil
		}
		if !osbclient.IsNotFound(err) {
			return nil, err
		}
		t := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, &osbclient.StillInProgressError{Reason: "the broker did not serve the binding's credentials yet", Err: ctx.Err()}
		case <-t.C:
		}
	}
}

// store writes a bind's credentials; when that fails, the broker's
// binding is undone.
func (p *Protocol) store(ctx context.Context, req Request, res Result, creds map[string]any) Result {
	res.Verdict = Done
	if req.Store == nil {
		return res
	}
	if err := req.Store(ctx, creds); err != nil {
		res.Verdict, res.Err = Refused, err
		res.Undo = fmt.Sprintf("lockstep could not write the binding's credentials: %v", err)
	}
	return res
}

// adopt reads what the broker holds under the object's id and hands it to
// req.Adopt, which decides (a broker that holds nothing under the id
// included); nothing changes at the broker, so a read that got no answer
// is refused, not unknown.
func (p *Protocol) adopt(ctx context.Context, req Request, meta osbclient.RequestMeta) Result {
	held, err := p.fetch(ctx, req, meta)
	res := Result{Verdict: Done, HTTPStatus: http.StatusOK}
	switch {
	case osbclient.IsNotFound(err) || osbclient.IsGone(err):
		held = Held{Missing: true}
		res.HTTPStatus = http.StatusNotFound
		if osbclient.IsGone(err) {
			res.HTTPStatus = http.StatusGone
		}
	case err != nil:
		res := Result{Verdict: Refused, Err: err}
		if h, ok := osbclient.AsHTTPError(err); ok {
			res.HTTPStatus = h.StatusCode
		}
		return res
	}
	if held.Instance != nil {
		res.DashboardURL = held.Instance.DashboardURL
	}
	switch {
	case req.Adopt != nil:
		if err := req.Adopt(ctx, held); err != nil {
			res.Verdict, res.Err = Refused, err
		}
	case held.Missing:
		res.Verdict, res.Err = Refused, fmt.Errorf("the broker holds nothing under id %q", req.InstanceID+"/"+req.BindingID)
	}
	return res
}

// Fetch reads what the broker holds of req's object (GET of the instance,
// or of the binding with its credentials); a broker that holds nothing
// under the id answers 404 or 410 (osbclient.IsNotFound, IsGone).
func (p *Protocol) Fetch(ctx context.Context, req Request, requestID string) (Held, error) {
	return p.fetch(ctx, req, req.Who.meta(requestID))
}

func (p *Protocol) fetch(ctx context.Context, req Request, meta osbclient.RequestMeta) (Held, error) {
	var (
		held Held
		err  error
	)
	if req.BindingID != "" {
		held.Binding, err = req.Client.GetBinding(ctx, meta, osbclient.GetBindingRequest{InstanceID: req.InstanceID, BindingID: req.BindingID,
			ServiceID: req.ServiceID, PlanID: req.PlanID})
	} else {
		held.Instance, err = req.Client.GetInstance(ctx, meta, osbclient.GetInstanceRequest{InstanceID: req.InstanceID,
			ServiceID: req.ServiceID, PlanID: req.PlanID})
	}
	return held, err
}

// refusal is the result of a request the broker did not accept: refused
// or unknown (classify). A refusal of a provision, update or bind may
// name ids the broker's catalog no longer has: the catalog is read again
// (see refresh.go).
func (p *Protocol) refusal(ctx context.Context, req Request, err error) Result {
	res := Result{Verdict: classify(err), Err: err}
	if h, ok := osbclient.AsHTTPError(err); ok {
		res.HTTPStatus = h.StatusCode
	}
	if res.Verdict == Refused && res.HTTPStatus >= 400 && (req.creates() || req.Verb == v1alpha1.VerbUpdate) {
		res.Stale = p.staleIDs(ctx, req)
	}
	return res
}

func describe(d string) string {
	if d == "" {
		return "(the broker gave no description)"
	}
	return fmt.Sprintf("%q", d)
}
