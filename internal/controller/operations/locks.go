package operations

import (
	"context"
	"errors"
	"fmt"
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
// not exist; the Reconciler then settles it from what the API server holds,
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
// returns how many it wrote. A lock whose record cannot be read or
// written is logged and left for the next scan, and the scan goes on with
// the others, so that one such lock never keeps the operations behind the
// others from being settled; the error then names every lock it left.
func (l *Locks) Scan(ctx context.Context) (int, error) {
	leases, err := l.Leases.Locks(ctx)
	if err != nil {
		return 0, err
	}
	restored := 0
	var errs []error
	for i := range leases {
		wrote, err := l.restore(ctx, &leases[i])
		if err != nil {
			log.FromContext(ctx).Info("could not write the record of an operation cut short from its lock; looking at the other locks, and at this one again at the next scan",
				"lock", leases[i].Name, "error", err.Error())
			errs = append(errs, fmt.Errorf("lock %s: %w", leases[i].Name, err))
			continue
		}
		if wrote {
			restored++
		}
	}
	return restored, errors.Join(errs...)
}

// restore writes the record of lease when it is due and has none; it
// reports whether it wrote one.
func (l *Locks) restore(ctx context.Context, lease *coordinationv1.Lease) (bool, error) {
	if l.clock().Now().Sub(journal.Acquired(lease)) < l.After {
		return false, nil
	}
	// Only from the lock as it is now: a lock released and taken again
	// since the list carries another operation.
	var current coordinationv1.Lease
	if err := l.Leases.Client.Get(ctx, client.ObjectKeyFromObject(lease), &current); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	if current.ResourceVersion != lease.ResourceVersion {
		return false, nil
	}
	wrote, err := l.Journal.Restore(ctx, &current)
	if err != nil || !wrote {
		return false, err
	}
	log.FromContext(ctx).Info("wrote the record of an operation cut short from its lock; settling it from what the API server holds",
		"lock", current.Name, "operation", ptr.Deref(current.Spec.HolderIdentity, ""))
	return true, nil
}

func (l *Locks) clock() clock.PassiveClock {
	if l.Clock != nil {
		return l.Clock
	}
	return clock.RealClock{}
}
