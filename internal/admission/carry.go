package admission

import (
	"context"
	"fmt"
	"time"

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

// carrier carries changes out at the broker for one kind: lock, journal,
// call, answer.
type carrier struct {
	leases  *journal.Leases
	journal *journal.Journal
	recent  *refusals
	answers *Answers
	log     logr.Logger
}

func newCarrier(d Deps) *carrier {
	return &carrier{leases: d.Leases, journal: d.Journal, recent: newRefusals(d.RefusalMemory), answers: d.Answers, log: d.Broker.Log}
}

// carryOut is the broker phase common to every kind: take the object's
// lock and write the operation record (write-ahead), call the broker,
// record its answer. A refusal releases the lock at once; a success or an
// operation still running keeps it for the operations reconciler, which
// commits or follows the operation and then releases it.
//
// The lock and the record are written at the same time, so the reply waits
// for one round trip to the API server before the broker call, not two. A
// record whose operation then does not get the lock is deleted; should that
// fail, the operations reconciler deletes it: a Pending record the lock
// does not name never reached the broker (journal.Leases keeps a Pending
// record's lock until it is settled, so the lock cannot have moved on).
//
// A success is recorded after the reply (Answers); a refusal, an operation
// still running and an orphan are recorded before it, because what happens
// next depends on them being written.
func (c *carrier) carryOut(ctx context.Context, in journal.Intent, call brokerCall) (admission.Warnings, error) {
	target := in.Target
	same := changeKey{uid: target.GetUID(), verb: in.Verb, specHash: in.SpecHash}
	if err := c.recent.get(same); err != nil {
		return nil, err
	}
	key := lockKey(in.Kind, target)
	op := &journal.Operation{ID: in.ID, Verb: in.Verb, User: in.User.Username, Started: time.Now(),
		Record: journal.OperationName(target.GetName(), in.Verb, in.ID)}
	begun := c.begin(ctx, in)
	l := c.lock(ctx, key, op, target, same)
	rec, err := begun()
	if !l.ok || err != nil {
		if l.ok {
			releaseLock(c.leases, key, op.Record, c.log) // the record could not be written
		}
		if rec != nil {
			c.discard(rec)
		}
	}
	switch {
	case l.identical:
		c.log.Info("identical change already carried out at the broker; allowed without a broker call",
			"object", client.ObjectKeyFromObject(target).String(), "operation", l.holder.Record)
		return nil, nil
	case l.err != nil:
		return nil, unavailable("could not take the lock of %s %q: %v; nothing was changed: retry", in.Kind, target.GetName(), l.err)
	case !l.ok:
		metrics.LockContention(in.Kind)
		msg := fmt.Sprintf("another change of %s %q is in flight at the broker: %s; nothing was changed: retry when it has finished",
			kindWord(in.Kind), target.GetName(), l.holder)
		if in.Verb == v1alpha1.VerbDeprovision || in.Verb == v1alpha1.VerbUnbind {
			msg += "; or " + wayOut(in.Kind, target.GetNamespace(), target.GetName())
		}
		return nil, conflict("%s", msg)
	case err != nil:
		return nil, unavailable("could not record the operation before calling the broker: %v; nothing was changed: retry", err)
	}
	ans := &journal.Answer{}
	warnings, inProgress, err := call(osbclient.RequestMeta{Identity: identity(in.User), RequestID: in.ID}, ans)
	c.log.Info("broker operation", "verb", in.Verb, "kind", in.Kind, "object", client.ObjectKeyFromObject(target).String(),
		"operation", rec.Name, "user", op.User, "allowed", err == nil, "inProgress", inProgress)
	if err == nil && !inProgress {
		c.answers.write(rec.Name, same, func() { c.record(ctx, rec, target, ans, false, nil) })
		return warnings, nil
	}
	recorded := c.record(ctx, rec, target, ans, inProgress, err)
	if err != nil && !inProgress {
		c.recent.put(same, err)
		// An orphan keeps the lock until mitigated. So does a refusal
		// whose record is still Pending: the lock tells the operations
		// reconciler that this operation reached the broker.
		if !ans.Mitigate && recorded {
			releaseLock(c.leases, key, op.Record, c.log)
		}
	}
	return warnings, err
}

// begin writes the operation's record in the background; the function it
// returns waits for the write.
func (c *carrier) begin(ctx context.Context, in journal.Intent) func() (*v1alpha1.BrokerOperation, error) {
	type begun struct {
		rec *v1alpha1.BrokerOperation
		err error
	}
	done := make(chan begun, 1)
	go func() {
		rec, err := c.journal.Begin(ctx, in)
		done <- begun{rec, err}
	}()
	return func() (*v1alpha1.BrokerOperation, error) {
		b := <-done
		return b.rec, b.err
	}
}

// locked is how taking an object's lock ended.
type locked struct {
	ok     bool
	holder *journal.Operation // the live holder when !ok
	// identical: the holder already carried out this very change.
	identical bool
	err       error
}

// lock takes the object's lock for op, waiting a moment for a holder to
// finish. The API server retries a request that conflicted in etcd, and
// asks the webhooks again: when the holder is the broker having carried
// out this very change, the retry is allowed (identical) and the
// operations reconciler commits it. That is checked while waiting too: a
// retry that reaches another replica may find the holder's answer not yet
// written, and the holder cannot finish before this retry is allowed.
func (c *carrier) lock(ctx context.Context, key journal.Key, op *journal.Operation, target client.Object, same changeKey) locked {
	identical := false
	holder, ok, err := c.leases.AcquireUnless(ctx, key, op, func(holder *journal.Operation) bool {
		identical = c.identicalDone(ctx, target, same, holder)
		return identical
	})
	return locked{ok: ok && err == nil, holder: holder, identical: identical && !ok && err == nil, err: err}
}

// discard deletes the record of an operation that did not take the lock,
// with a context of its own: the request's may have ended.
func (c *carrier) discard(rec *v1alpha1.BrokerOperation) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.journal.Discard(ctx, rec); err != nil {
		c.log.Info("could not delete an unused operation record; the operations reconciler deletes it", "operation", rec.Name, "error", err.Error())
	}
}

// record writes the broker's answer with a context of its own: the
// request's may have reached its deadline while polling, or ended with the
// reply. It reports whether the answer was written.
func (c *carrier) record(ctx context.Context, rec *v1alpha1.BrokerOperation, target client.Object, ans *journal.Answer, inProgress bool, err error) bool {
	recordCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	return finish(recordCtx, c.journal, rec, target, ans, inProgress, err, c.log)
}

// releaseLock frees a lock with a context of its own: the request's may
// have ended.
func releaseLock(leases *journal.Leases, key journal.Key, record string, log logr.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := leases.Release(ctx, key, record); err != nil {
		log.Info("could not release a lock; it expires by itself", "lock", key.String(), "error", err.Error())
	}
}

func kindWord(kind string) string {
	if kind == "ServiceBinding" {
		return "binding"
	}
	return "instance"
}

// identicalDone reports whether the lock is held by an operation that the
// broker already carried out for exactly this change: same object, same
// verb, same spec. This replica knows its own successes whose answer is
// still being written; others are read from the journal.
func (c *carrier) identicalDone(ctx context.Context, target client.Object, change changeKey, holder *journal.Operation) bool {
	if holder == nil || holder.Verb != change.verb || holder.Record == "" {
		return false
	}
	if c.answers.carriedOut(holder.Record, change) {
		return true
	}
	rec, err := c.journal.Find(ctx, target.GetNamespace(), holder.Record)
	if err != nil || rec == nil {
		return false
	}
	return rec.Spec.Target.UID == change.uid && rec.Spec.SpecHash == change.specHash &&
		(rec.Status.Phase == v1alpha1.PhaseSucceeded || rec.Status.Phase == v1alpha1.PhaseCommitted)
}
