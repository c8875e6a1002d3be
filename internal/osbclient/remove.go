package osbclient

import (
	"context"
	"errors"
	"fmt"

	"github.com/lockstep-dev/lockstep/internal/osbapi"
)

// Removal is what to remove at a broker: an instance, or a binding of an
// instance (BindingID set).
type Removal struct {
	InstanceID, BindingID, ServiceID, PlanID string
}

// Remove deprovisions an instance or unbinds a binding and, when the broker
// answers 202, polls it to the end within ctx. It reports done once the
// broker no longer holds it (410 Gone counts), false when the broker is
// still working at the end of ctx, and an error when the broker refused or
// failed.
func (c *Client) Remove(ctx context.Context, meta RequestMeta, r Removal, opts PollOptions) (bool, error) {
	var (
		resp *DeleteResponse
		err  error
	)
	if r.BindingID != "" {
		resp, err = c.Unbind(ctx, meta, UnbindRequest{InstanceID: r.InstanceID, BindingID: r.BindingID, ServiceID: r.ServiceID, PlanID: r.PlanID})
	} else {
		resp, err = c.Deprovision(ctx, meta, DeprovisionRequest{InstanceID: r.InstanceID, ServiceID: r.ServiceID, PlanID: r.PlanID})
	}
	if err != nil || !resp.Async {
		return err == nil, err
	}
	opts.Deleting = true
	var last *LastOperation
	if r.BindingID != "" {
		last, err = c.PollBinding(ctx, meta, BindingLastOperationRequest{InstanceID: r.InstanceID,
			BindingID: r.BindingID, ServiceID: r.ServiceID, PlanID: r.PlanID, Operation: resp.Operation}, opts)
	} else {
		last, err = c.PollInstance(ctx, meta, InstanceLastOperationRequest{InstanceID: r.InstanceID,
			ServiceID: r.ServiceID, PlanID: r.PlanID, Operation: resp.Operation}, opts)
	}
	switch {
	case errors.Is(err, ErrStillInProgress):
		return false, nil
	case err != nil:
		return false, err
	case last.State != osbapi.StateSucceeded:
		return false, fmt.Errorf("the broker failed: %s", last.Description)
	}
	return true, nil
}
