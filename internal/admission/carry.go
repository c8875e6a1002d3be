package admission

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/brokercall"
	"github.com/lockstep-dev/lockstep/internal/journal"
	"github.com/lockstep-dev/lockstep/internal/metrics"
)

// carrier is the broker phase common to every kind: it hands the change
// to the one protocol of a broker call (brokercall.Protocol.Carry: lock,
// call, record) and turns how it ended into the admission's answer.
type carrier struct {
	protocol *brokercall.Protocol
	recent   *refusals
	// ids refuses, under the lock, a create whose external id another
	// object holds (see external_id.go).
	ids *externalIDs
	log logr.Logger
}

func newCarrier(d Deps) *carrier {
	return &carrier{
		protocol: &brokercall.Protocol{
			Carrier:  &journal.Carrier{Leases: d.Leases, Journal: d.Journal, After: d.After, Objects: d.Reader, Replied: true, Log: d.Broker.Log},
			Catalogs: d.Catalogs, ClusterID: d.Broker.ClusterID, Poll: d.Broker.Poll, Log: d.Broker.Log,
		},
		recent: newRefusals(d.RefusalMemory),
		ids:    d.externalIDs(),
		log:    d.Broker.Log,
	}
}

// carryOut carries the change req asks for out at the broker. The reply
// waits for one API server write, the object's lock, before the broker
// call; the record with the broker's answer is written after the reply
// (see journal.Carrier). What the requester is told follows from the
// result (tell), and the record says the same. A refusal is remembered
// for a moment, so that the API server's retry of the same request gets
// it again without a broker call.
func (c *carrier) carryOut(ctx context.Context, req brokercall.Request, ch wording) (admission.Warnings, error) {
	same := req.Change()
	if err := c.recent.get(same); err != nil {
		return nil, err
	}
	var warnings admission.Warnings
	if req.ClaimsID() {
		req.Before = func(ctx context.Context) error { return c.ids.free(ctx, req.Who.User, req.Kind, req.Object) }
	}
	req.Tell = func(res brokercall.Result) error {
		w, err := ch.tell(req.Verb, res)
		warnings = w
		return byBroker(req.Verb, res, err)
	}
	res := c.protocol.Carry(ctx, req)
	metrics.AdmissionWrites(res.Called(), writesOf(res.Writes))
	target := req.Object
	switch {
	case res.Identical:
		c.log.Info("identical change already carried out at the broker; allowed without a broker call",
			"object", client.ObjectKeyFromObject(target).String(), "operation", res.Holder.Record)
		return nil, nil
	case res.Repeat:
		// The API server's retry of a request whose webhook call was cut
		// short finds the lock held by its own first try, whose broker
		// call may have gone out: neither allowed nor refused, as for any
		// request that got no answer.
		c.log.Info("the same change by the same user holds the lock; its outcome is not known yet",
			"object", client.ObjectKeyFromObject(target).String(), "operation", res.Holder.Record)
		msg := fmt.Sprintf("%s %s %q: this very change, asked by %q, is in flight at the broker already (%s) and its answer is not known here: "+
			"the outcome is unknown; nothing more was sent to the broker, and lockstep follows that operation to its end (the object's InSync condition and its BrokerOperation show the progress)",
			req.Verb, kindWord(req.Kind), target.GetName(), req.Who.User.Username, res.Holder)
		if req.Verb == v1alpha1.VerbDeprovision || req.Verb == v1alpha1.VerbUnbind {
			msg += "; should the broker not carry it out, " + wayOut(req.Kind, target.GetNamespace(), target.GetName())
		}
		return nil, unavailable("%s", msg)
	case res.LockErr != nil:
		return nil, unavailable("could not take the lock of %s %q: %v; nothing was changed: retry", req.Kind, target.GetName(), res.LockErr)
	case res.Holder != nil || !res.Called():
		metrics.LockContention(string(req.Kind))
		if err := c.ids.inFlight(ctx, req, res.Holder); err != nil {
			return nil, err
		}
		msg := fmt.Sprintf("another change of %s %q is in flight at the broker: %s; nothing was changed: retry when it has finished",
			kindWord(req.Kind), target.GetName(), res.Holder)
		if req.Verb == v1alpha1.VerbDeprovision || req.Verb == v1alpha1.VerbUnbind {
			msg += "; or " + wayOut(req.Kind, target.GetNamespace(), target.GetName())
		}
		return nil, conflict("%s", msg)
	case res.Stopped:
		return nil, journal.ErrStopped
	}
	if res.Told != nil && (res.Verdict == brokercall.Refused || res.Verdict == brokercall.Unknown) {
		c.recent.put(same, res.Told)
	}
	return warnings, res.Told
}

func writesOf(ws []journal.Write) []metrics.Write {
	out := make([]metrics.Write, len(ws))
	for i, w := range ws {
		out[i] = metrics.Write{Kind: w.Kind, Verb: w.Verb}
	}
	return out
}

func kindWord(kind v1alpha1.TargetKind) string {
	if kind == v1alpha1.KindServiceBinding {
		return "binding"
	}
	return "instance"
}
