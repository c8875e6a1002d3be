package operations

import (
	"context"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/lockstep-dev/lockstep/internal/journal"
)

// Locks writes the records that locks carry when nobody else did. An
// admission writes the object's lock, carrying the operation's record,
// before the broker call, and the record after its reply; should lockstep
// stop in between, the lock is all that is left of an operation the broker
// may have carried out. Locks lists the locks now and then, and writes the
// record of every lock older than an admission can last whose record does
// not exist; Operations then settles it from what the API server holds,
// and releases the lock.
type Locks struct {
	Leases  *journal.Leases
	Journal *journal.Journal
	// After is how long after a lock was taken its record is due: the
	// longest admission plus a margin.
	After time.Duration
	// Every is how often the locks are listed.
	Every time.Duration
	// Clock tells the locks' ages; nil means the real clock.
	Clock clock.PassiveClock
}

// Start lists the locks at once (after a restart, operations cut short
// are picked up again), then every Every, until ctx ends.
func (l *Locks) Start(ctx context.Context) error {
	wait.NonSlidingUntilWithContext(ctx, func(ctx context.Context) {
		if _, err := l.Scan(ctx); err != nil {
			log.FromContext(ctx).Info("could not look for operations cut short", "error", err.Error())
		}
	}, max(l.Every, time.Second))
	return nil
}

// NeedLeaderElection says Locks runs in the elected replica only, with the
// other reconcilers that change state.
func (l *Locks) NeedLeaderElection() bool { return true }

// Scan writes the records of the locks that are due and have none; it
// returns how many it wrote.
func (l *Locks) Scan(ctx context.Context) (int, error) {
	leases, err := l.Leases.Locks(ctx)
	if err != nil {
		return 0, err
	}
	restored := 0
	for i := range leases {
		lease := &leases[i]
		if l.clock().Now().Sub(journal.Acquired(lease)) < l.After {
			continue
		}
		// Only from the lock as it is now: a lock released and taken
		// again since the list carries another operation.
		var current coordinationv1.Lease
		if err := l.Leases.Client.Get(ctx, client.ObjectKeyFromObject(lease), &current); err != nil {
			if client.IgnoreNotFound(err) != nil {
				return restored, err
			}
			continue
		}
		if current.ResourceVersion != lease.ResourceVersion {
			continue
		}
		wrote, err := l.Journal.Restore(ctx, &current)
		if err != nil {
			return restored, err
		}
		if wrote {
			restored++
			log.FromContext(ctx).Info("wrote the record of an operation cut short from its lock; settling it from what the API server holds",
				"lock", current.Name, "operation", ptr.Deref(current.Spec.HolderIdentity, ""))
		}
	}
	return restored, nil
}

func (l *Locks) clock() clock.PassiveClock {
	if l.Clock != nil {
		return l.Clock
	}
	return clock.RealClock{}
}
