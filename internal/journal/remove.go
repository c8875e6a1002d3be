package journal

import (
	"context"
	"errors"
	"fmt"

	"github.com/lockstep-dev/lockstep/internal/broker"
)

// brokerTarget is what to remove at a broker: an instance, or a binding of
// an instance.
type brokerTarget struct {
	binding                                  bool
	instanceID, bindingID, serviceID, planID string
}

// removeAtBroker deprovisions an instance or unbinds a binding and, when
// the broker answers 202, polls it to the end within ctx. It reports done
// once the broker no longer holds it (410 Gone counts), false when the
// broker is still working at the end of ctx, and an error when the broker
// refused or failed.
func removeAtBroker(ctx context.Context, c *broker.Client, t brokerTarget, opts broker.PollOptions) (bool, error) {
	var (
		resp *broker.DeleteResponse
		err  error
	)
	if t.binding {
		resp, err = c.Unbind(ctx, broker.RequestMeta{}, broker.UnbindRequest{InstanceID: t.instanceID, BindingID: t.bindingID, ServiceID: t.serviceID, PlanID: t.planID})
	} else {
		resp, err = c.Deprovision(ctx, broker.RequestMeta{}, broker.DeprovisionRequest{InstanceID: t.instanceID, ServiceID: t.serviceID, PlanID: t.planID})
	}
	if err != nil || !resp.Async {
		return err == nil, err
	}
	opts.Deleting = true
	var last *broker.LastOperation
	if t.binding {
		last, err = c.PollBinding(ctx, broker.RequestMeta{}, broker.BindingLastOperationRequest{InstanceID: t.instanceID,
			BindingID: t.bindingID, ServiceID: t.serviceID, PlanID: t.planID, Operation: resp.Operation}, opts)
	} else {
		last, err = c.PollInstance(ctx, broker.RequestMeta{}, broker.InstanceLastOperationRequest{InstanceID: t.instanceID,
			ServiceID: t.serviceID, PlanID: t.planID, Operation: resp.Operation}, opts)
	}
	switch {
	case errors.Is(err, broker.ErrStillInProgress):
		return false, nil
	case err != nil:
		return false, err
	case last.State != broker.StateSucceeded:
		return false, fmt.Errorf("the broker failed: %s", last.Description)
	}
	return true, nil
}
