package journal

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/tracing"
)

// Carrier carries broker operations out, one per object at a time, with
// one API server write before the broker call and everything else after
// it:
//
//  1. the object's lock (a Lease in lockstep's namespace) is written,
//     carrying the operation's record as it is to be written (the lock is
//     the write-ahead record); a live holder makes Run return at once;
//  2. the broker is called;
//  3. Run returns, and the caller replies;
//  4. the record is written with the broker's answer, in one write
//     (After), and the lock is released when the broker refused; a
//     success that the API server already holds (Objects) is recorded
//     committed, and its lock released, in the same steps; otherwise the
//     operations reconciler commits or follows the record, then releases
//     the lock.
//
// Should lockstep stop after 1, the operations reconciler writes the
// record from the lock (Journal.Restore) and settles it from what the API
// server holds: the broker may or may not have acted, and the settlement
// holds either way (see docs/design.md).
type Carrier struct {
	Leases  *Leases
	Journal *Journal
	// After writes the answers after the reply; nil writes them before
	// Run returns.
	After *After
	// Objects reads the operations' objects (a cache): a success whose
	// change the API server holds by the time its record is written is
	// recorded Committed at once. Nil leaves every success to the
	// operations reconciler's commit.
	Objects client.Reader
	// Replied says that the operations answer requests (admission), whose
	// replies told the requester the broker's answer: a success is
	// recorded without an event then, since the reply, the record and the
	// object's status all say it. Refusals and outcomes still to come are
	// events on the object for anyone who looks at it later.
	Replied bool
	Log     logr.Logger
	// Crash, when set, is asked at every crash point; true stops Run
	// there as if lockstep had stopped (nothing more is written).
	Crash func(Point) bool
}

// Point is a place in Run where lockstep may stop.
type Point string

// The crash points of Run, in order.
const (
	// BeforeLock: nothing is written.
	BeforeLock Point = "before the lock"
	// BeforeCall: the lock is written; the broker was not called.
	BeforeCall Point = "after the lock, before the broker call"
	// BeforeReply: the broker answered; the admission never replied.
	BeforeReply Point = "after the broker call, before the reply"
	// BeforeAnswer: the admission replied; the record is not written.
	BeforeAnswer Point = "after the reply, before the record"
)

// ErrStopped is the error of a Run stopped at a crash point.
var ErrStopped = errors.New("stopped at a crash point")

// Call makes the broker call of an operation and returns the answer to
// record, its phase decided (see internal/brokercall, which classifies
// every broker answer the same way).
type Call func() Answer

// Outcome is how Run ended.
type Outcome struct {
	// Holder is the live operation holding the object's lock: the broker
	// was not called.
	Holder *Operation
	// Identical says the holder already carried out this very change: the
	// request is allowed without a broker call.
	Identical bool
	// Repeat says the holder is this very change, asked by the same user,
	// and not known to be carried out: typically the API server's retry
	// of a request whose webhook call was cut short. The broker was not
	// called again; the holder's outcome is this request's, and it is not
	// known yet.
	Repeat bool
	// LockErr is why the lock could not be written: the broker was not
	// called.
	LockErr error
	// Record names the operation's record when the broker was called.
	Record string
	// Stopped says that Run stopped at a crash point (Crash) after the
	// lock was written.
	Stopped bool
	// Answer is the broker's answer, as it is recorded.
	Answer Answer
	// Writes are the API server writes Run waited for.
	Writes []Write
}

// Called reports whether the broker was called.
func (o Outcome) Called() bool { return o.Record != "" }

// Run carries out the operation in, calling call once the object's lock
// is written.
func (c *Carrier) Run(ctx context.Context, in Intent, call Call) Outcome {
	if c.stop(BeforeLock) {
		return Outcome{LockErr: ErrStopped}
	}
	draft := c.Journal.Draft(in)
	if tp := tracing.Traceparent(ctx); tp != "" {
		// The operations reconciler's follow-ups join this trace.
		draft.Annotations[tracing.AnnotationTraceparent] = tp
	}
	op := &Operation{ID: in.ID, Verb: in.Verb, User: in.User.Username, Started: Started(draft), Record: draft.Name, Carried: draft}
	counted := &counting{Client: c.Leases.Client}
	leases := *c.Leases
	leases.Client = counted
	change := in.Change()
	identical := false
	key := KeyOf(in.Kind, in.Target)
	lockCtx, span := tracing.Start(ctx, tracing.SpanLock)
	holder, ok, err := leases.AcquireUnless(lockCtx, key, op, func(holder *Operation) bool {
		identical = c.identicalDone(lockCtx, in.Target.GetNamespace(), change, holder)
		return identical || (in.Creates() && holder != nil && !holder.About(key))
	})
	lockSpan(span, draft.Name, ok, holder, err)
	out := Outcome{Writes: counted.taken()}
	switch {
	case err != nil:
		out.LockErr = err
		return out
	case !ok:
		out.Holder, out.Identical = holder, identical
		out.Repeat = !identical && holder.Repeats(change, in.User)
		return out
	}
	out.Record = draft.Name
	if c.stop(BeforeCall) {
		out.Stopped = true
		return out
	}
	ans := call()
	out.Answer = ans
	c.Log.Info("broker operation", "verb", in.Verb, "kind", in.Kind, "object", client.ObjectKeyFromObject(in.Target).String(),
		"operation", draft.Name, "user", in.User.Username, "phase", ans.Phase)
	if c.stop(BeforeReply) {
		out.Stopped = true
		return out
	}
	var done *Change
	if ans.Phase == v1alpha1.PhaseSucceeded {
		done = &change
		if change.Deletes() {
			c.Leases.Deleted.Remember(change.deleted())
		}
	}
	target, version := in.Target, op.Version
	c.After.run(draft.Name, done, func() {
		if c.stop(BeforeAnswer) {
			return
		}
		c.settle(ctx, draft, target, version, ans)
	})
	return out
}

// lockSpan ends the span of taking the lock with how it went.
func lockSpan(span trace.Span, record string, taken bool, holder *Operation, err error) {
	defer span.End()
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(tracing.AttrRecord.String(record))
	switch {
	case err != nil:
		span.SetAttributes(tracing.AttrLock.String("failed"))
		span.SetStatus(codes.Error, "the lock could not be written")
	case taken:
		span.SetAttributes(tracing.AttrLock.String("taken"))
	case holder != nil:
		span.SetAttributes(tracing.AttrLock.String("held"), tracing.AttrHolder.String(holder.Record))
	default:
		span.SetAttributes(tracing.AttrLock.String("held"))
	}
}

// Committing the record of a success: how long settle waits for the API
// server to hold the change, and how often it looks. The API server
// persists an allowed change a moment after the reply.
const (
	commitWait = time.Second
	commitPoll = 5 * time.Millisecond
)

// settle writes the record with the broker's answer, with a context of
// its own (the request's ends with the reply), in one write. A success
// that the API server holds by then is recorded Committed, and its lock
// released, like a refusal's; an orphan, an operation in progress and a
// success not persisted yet keep the lock for the operations reconciler.
// The lock is released without reading it first: it is as the operation
// wrote it, unless renewed. Should the write fail, the lock stays, and the
// reconciler restores and settles the record.
func (c *Carrier) settle(ctx context.Context, draft *v1alpha1.BrokerOperation, target client.Object, version string, ans Answer) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	ctx, span := tracing.Start(ctx, tracing.SpanRecord)
	defer span.End()
	if span.IsRecording() {
		defer func() {
			span.SetAttributes(tracing.AttrRecord.String(draft.Name), tracing.AttrPhase.String(string(ans.Phase)))
		}()
	}
	if ans.Phase == v1alpha1.PhaseSucceeded && c.persisted(ctx, draft) {
		ans.Phase = v1alpha1.PhaseCommitted
	}
	about := target
	if c.Replied && (ans.Phase == v1alpha1.PhaseSucceeded || ans.Phase == v1alpha1.PhaseCommitted) {
		about = nil
	}
	final := ans.Phase == v1alpha1.PhaseFailed || ans.Phase == v1alpha1.PhaseCommitted
	if final {
		// The operations reconciler sees the record final the moment it
		// is written, and releases the lock of every final record: this
		// release is announced first, so that it does not read the lock
		// and release it a second time.
		c.Leases.Released.Remember(draft.Name)
	}
	settled, err := c.Journal.Record(ctx, draft, about, ans)
	if err != nil || !settled {
		c.Leases.Released.Forget(draft.Name)
	}
	if err != nil {
		c.Log.Info("could not record a broker answer; the operations reconciler settles it", "operation", draft.Name, "error", err.Error())
		return
	}
	if !settled {
		return // the operations reconciler restored and settled it first; that answer stands
	}
	if !final {
		return
	}
	key := KeyOfRecord(draft)
	if err := c.Leases.ReleaseAt(ctx, key, draft.Name, version); err != nil {
		c.Leases.Released.Forget(draft.Name)
		c.Log.Info("could not release a lock; it is released at the next look at its record, or expires by itself", "lock", key.String(), "error", err.Error())
	}
}

// persisted waits up to commitWait for Objects to hold the change of the
// successful operation op, and reports whether it does. It looks at the
// cache's own copy (it polls, and only reads what it gets).
func (c *Carrier) persisted(ctx context.Context, op *v1alpha1.BrokerOperation) bool {
	if c.Objects == nil {
		return false
	}
	held := false
	_ = wait.PollUntilContextTimeout(ctx, commitPoll, commitWait, true, func(ctx context.Context) (bool, error) {
		target, err := Target(ctx, c.Objects, op, client.UnsafeDisableDeepCopy)
		held = err == nil && Persisted(op, target)
		return held, nil
	})
	return held
}

// identicalDone reports whether holder is an operation that the broker
// already carried out for exactly this change. The API server retries a
// request that conflicted in etcd and asks the webhooks again; the retry
// is allowed without a second broker call, and the operations reconciler
// commits the holder. The same holds for the delete the operations
// reconciler makes of an object whose deprovision or unbind the broker
// confirmed after admission answered: the broker is not asked a second
// time. Successes whose record is still being written are known to this
// replica (After); others are read from the journal.
func (c *Carrier) identicalDone(ctx context.Context, namespace string, change Change, holder *Operation) bool {
	if holder == nil || holder.Verb != change.Verb || holder.Record == "" {
		return false
	}
	if c.After.carriedOut(holder.Record, change) {
		return true
	}
	rec, err := c.Journal.Find(ctx, namespace, holder.Record)
	if err != nil || rec == nil {
		return false
	}
	if ChangeOf(rec) != change {
		return false
	}
	switch rec.Status.Phase {
	case v1alpha1.PhaseSucceeded, v1alpha1.PhaseCommitted:
		return true
	case v1alpha1.PhaseOrphaned, v1alpha1.PhaseCompensated:
		// A delete the broker confirmed and the API server did not carry
		// out yet: its compensation is this very delete.
		return change.Verb == v1alpha1.VerbDeprovision || change.Verb == v1alpha1.VerbUnbind
	}
	return false
}

func (c *Carrier) stop(p Point) bool {
	return c.Crash != nil && c.Crash(p)
}

// After writes the records of operations after the reply, so that the
// reply waits for no write after the broker call.
//
// That holds whatever the answer: the API server persists an object only
// if every webhook allowed it, and lockstep allows only what the broker
// carried out; a refusal is remembered by the lock until its record is
// written; and a record never written (lockstep stopped first) is restored
// from the lock by the operations reconciler.
//
// Until a success is written, this replica remembers the change it carried
// out, so that the API server's retry of the same request is allowed
// without a second broker call, as it is once the record says so.
type After struct {
	mu      sync.Mutex
	pending map[string]Change // record name → the change it carried out
	wg      sync.WaitGroup
}

// NewAfter returns an empty After.
func NewAfter() *After {
	return &After{pending: map[string]Change{}}
}

// run runs fn, which writes the record named record, in the background;
// done is the change the record carried out, if it succeeded. A nil After
// runs fn at once.
func (a *After) run(record string, done *Change, fn func()) {
	if a == nil {
		fn()
		return
	}
	if done != nil {
		a.mu.Lock()
		a.pending[record] = *done
		a.mu.Unlock()
	}
	a.wg.Go(func() {
		defer func() {
			a.mu.Lock()
			delete(a.pending, record)
			a.mu.Unlock()
		}()
		fn()
	})
}

// carriedOut reports whether the operation named record carried out
// change and its record is still being written.
func (a *After) carriedOut(record string, change Change) bool {
	if a == nil {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	got, ok := a.pending[record]
	return ok && got == change
}

// Wait blocks until every record handed to the background is written.
func (a *After) Wait() {
	if a != nil {
		a.wg.Wait()
	}
}
