package instance

import (
	"context"
	"errors"
	"fmt"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/brokercall"
	"github.com/lockstep-dev/lockstep/internal/controller/brokered"
)

// errBusy: another operation took the object's lock first.
var errBusy = errors.New("another operation holds the instance's lock; lockstep compares again next time")

// correct re-applies the persisted spec of an instance whose broker holds
// something else, as an update lockstep makes on its own, on behalf of the
// user whose change it applied last, through the one protocol of a broker
// call: it takes the object's lock and writes the operation's record, as
// admission does, so that `kubectl get brokeroperations` shows who changed
// what. The operations reconciler then commits it (or follows it while
// the broker works, or until it learns an unknown outcome), which sets
// InSync again.
func (k Kind) correct(ctx context.Context, si *v1alpha1.ServiceInstance, t brokered.Target, heldPlanID string) error {
	onBehalfOf := ""
	if last := si.Status.LastOperation; last != nil {
		onBehalfOf = last.User
	}
	req, err := brokercall.Reapply(ctx, k.Secrets, si, t.Entry, t.Plan, heldPlanID, k.Protocol.Lockstep(onBehalfOf, brokercall.ReasonCorrection))
	if err != nil {
		return err
	}
	res := k.Protocol.Carry(ctx, req)
	switch {
	case res.LockErr != nil:
		return fmt.Errorf("taking the instance's lock: %w", res.LockErr)
	case !res.Called():
		return errBusy
	case res.Verdict == brokercall.Refused:
		return res.Err
	}
	// A success, an operation in progress and an unknown outcome keep the
	// lock: the operations reconciler commits or follows it, then
	// releases it. A refusal's lock is released once its record is
	// written.
	return nil
}
