package operations

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/journal"
	"github.com/lockstep-dev/lockstep/internal/metrics"
)

// expire deletes the final records of an object that no longer exists once
// they are older than Retention, so that the journal stays bounded when
// objects come and go (the records of an object that exists are bounded by
// Keep). It runs for each final record; the record of the delete, the
// object's newest, looks after its older siblings too, and asks to be
// reconciled again when the next one is due.
// deletingRecheck is how often the records of an object that is being
// deleted, and whose records are due, look whether it is gone.
const deletingRecheck = 10 * time.Second

func (r *Reconciler) expire(ctx context.Context, op *v1alpha1.BrokerOperation) (ctrl.Result, error) {
	if r.Retention <= 0 || op.Spec.Target.UID == "" {
		return ctrl.Result{}, nil
	}
	target, err := r.target(ctx, op)
	if err != nil {
		return ctrl.Result{}, err
	}
	if target != nil {
		if target.GetDeletionTimestamp() == nil {
			return ctrl.Result{}, nil
		}
		// The object is being deleted (its record may be final before it
		// is gone): its records expire once it is gone, so look again
		// when this one would be due, and while it stays, now and then.
		return ctrl.Result{RequeueAfter: max(r.Retention-r.clock().Now().Sub(completed(op)), deletingRecheck)}, nil
	}
	records, err := journal.CachedRecords(ctx, r.Client, r.Journal.Namespace, journal.TargetNamespace(op), string(op.Spec.Target.UID))
	if err != nil {
		return ctrl.Result{}, err
	}
	var next time.Duration
	for i := range records {
		rec := &records[i]
		if !final(rec.Status.Phase) {
			continue
		}
		age := r.clock().Now().Sub(completed(rec))
		if age < r.Retention {
			if wait := r.Retention - age; next == 0 || wait < next {
				next = wait
			}
			continue
		}
		if err := r.Client.Delete(ctx, rec); err != nil && !apierrors.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("removing the expired record %s/%s: %w", rec.Namespace, rec.Name, err)
		}
		metrics.OperationPruned("expired")
	}
	return ctrl.Result{RequeueAfter: next}, nil
}
