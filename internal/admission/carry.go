package admission

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/journal"
	"github.com/lockstep-dev/lockstep/internal/metrics"
	"github.com/lockstep-dev/lockstep/internal/osbclient"
)

// brokerCall makes an admission's broker call; it fills in the broker's
// answer and reports whether the operation is still running at the end of
// the budget.
type brokerCall func(meta osbclient.RequestMeta, ans *journal.Answer) (admission.Warnings, bool, error)

// carrier is the broker phase common to every kind: it hands the operation
// to the journal's Carrier (lock, call, record) and turns how it ended
// into the admission's answer.
type carrier struct {
	run    *journal.Carrier
	recent *refusals
	// ids refuses, under the lock, a create whose external id another
	// object holds (see external_id.go).
	ids *externalIDs
	log logr.Logger
}

func newCarrier(d Deps) *carrier {
	return &carrier{
		run:    &journal.Carrier{Leases: d.Leases, Journal: d.Journal, After: d.After, Log: d.Broker.Log},
		recent: newRefusals(d.RefusalMemory),
		ids:    d.externalIDs(),
		log:    d.Broker.Log,
	}
}

// carryOut carries the change in out at the osbclient. The reply waits for
// one API server write, the object's lock, before the broker call; the
// record with the broker's answer is written after the reply (see
// journal.Carrier). A refusal is remembered for a moment, so that the API
// server's retry of the same request gets it again without a broker call.
func (c *carrier) carryOut(ctx context.Context, in journal.Intent, call brokerCall) (admission.Warnings, error) {
	same := in.Change()
	if err := c.recent.get(same); err != nil {
		return nil, err
	}
	var warnings admission.Warnings
	out := c.run.Run(ctx, in, func(meta osbclient.RequestMeta, ans *journal.Answer) (bool, error) {
		if in.Creates() {
			if err := c.ids.free(ctx, in.User, in.Kind, in.Target); err != nil {
				return false, err
			}
		}
		w, inProgress, err := call(meta, ans)
		warnings = w
		return inProgress, err
	})
	metrics.AdmissionWrites(out.Called(), writesOf(out.Writes))
	target := in.Target
	switch {
	case out.Identical:
		c.log.Info("identical change already carried out at the broker; allowed without a broker call",
			"object", client.ObjectKeyFromObject(target).String(), "operation", out.Holder.Record)
		return nil, nil
	case out.LockErr != nil:
		return nil, unavailable("could not take the lock of %s %q: %v; nothing was changed: retry", in.Kind, target.GetName(), out.LockErr)
	case out.Holder != nil || !out.Called():
		metrics.LockContention(string(in.Kind))
		if err := c.ids.inFlight(ctx, in, out.Holder); err != nil {
			return nil, err
		}
		msg := fmt.Sprintf("another change of %s %q is in flight at the broker: %s; nothing was changed: retry when it has finished",
			kindWord(in.Kind), target.GetName(), out.Holder)
		if in.Verb == v1alpha1.VerbDeprovision || in.Verb == v1alpha1.VerbUnbind {
			msg += "; or " + wayOut(in.Kind, target.GetNamespace(), target.GetName())
		}
		return nil, conflict("%s", msg)
	}
	if out.Err != nil && !out.InProgress {
		c.recent.put(same, out.Err)
	}
	return warnings, out.Err
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
