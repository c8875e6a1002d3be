package brokercall

import (
	"context"

	"github.com/go-logr/logr"
	"github.com/google/uuid"
	authenticationv1 "k8s.io/api/authentication/v1"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/osbclient"
	"github.com/lockstep-dev/lockstep/internal/catalog"
	"github.com/lockstep-dev/lockstep/internal/journal"
)

// Protocol calls brokers for one part of lockstep (admission, a
// controller), each the same way.
type Protocol struct {
	// Carrier takes the objects' locks and writes the records (see
	// journal.Carrier); only Carry needs it.
	Carrier *journal.Carrier
	// Catalogs is read again after a refusal of ids the catalog may no
	// longer have; nil never reads it again.
	Catalogs *catalog.Cache
	// ClusterID goes into every OSB context.
	ClusterID string
	// Self is lockstep's own identity, for the calls it makes on its own.
	Self authenticationv1.UserInfo
	// Poll tunes the last_operation polls within a call's deadline.
	Poll osbclient.PollOptions
	Log  logr.Logger
}

// Carry carries req out as one journaled operation: it takes the object's
// lock, which carries the operation's record (the one API server write
// before the broker call); calls the broker; classifies the answer; and
// has the record written with it (after the caller's reply when the
// Carrier has an After). A live holder of the lock, or a lock that cannot
// be taken, returns at once without a broker call (Result.Holder,
// Result.Identical, Result.Repeat, Result.LockErr).
func (p *Protocol) Carry(ctx context.Context, req Request) Result {
	in := p.intent(req)
	record := journal.OperationName(req.Object.GetName(), req.Verb, in.ID)
	var res Result
	out := p.Carrier.Run(ctx, in, func() journal.Answer {
		if req.Before != nil {
			if err := req.Before(ctx); err != nil {
				res = Result{Verdict: Refused, Err: err, Told: err}
				return p.answer(req, record, res)
			}
		}
		res = p.send(ctx, req, req.Who.meta(in.ID))
		if req.Tell != nil {
			res.Told = req.Tell(res)
		}
		return p.answer(req, record, res)
	})
	res.Holder, res.Identical, res.Repeat, res.LockErr = out.Holder, out.Identical, out.Repeat, out.LockErr
	res.Record, res.Stopped, res.Writes = out.Record, out.Stopped, out.Writes
	return res
}

// intent is what the lock and the record say of req.
func (p *Protocol) intent(req Request) journal.Intent {
	in := journal.Intent{
		ID: uuid.NewString(), Target: req.Object, Kind: req.Kind, APIGroup: req.APIGroup, ExternalID: req.InstanceID, Broker: req.Broker,
		Verb: req.Verb, User: req.Who.userInfo(), SpecHash: journal.SpecHash(journal.SpecOf(req.Object)),
		ServiceID: req.ServiceID, PlanID: req.PlanID,
		ParametersDigest: req.ParametersDigest, CreateOnlyDigest: req.CreateOnlyDigest,
	}
	if req.Kind == v1alpha1.KindServiceBinding {
		in.ExternalID, in.InstanceID = req.BindingID, req.InstanceID
	}
	if req.PreviousPlanID != req.PlanID {
		in.PreviousPlanID = req.PreviousPlanID
	}
	return in
}
