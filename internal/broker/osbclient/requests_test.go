package osbclient_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/broker/osbclient"
)

// Requests that lack a required field are refused before anything is sent.
func TestInvalidRequestsAreNotSent(t *testing.T) {
	b := fakebroker.New(t)
	c := newClient(t, b)
	tests := []struct {
		name string
		call func(ctx context.Context) error
		msg  string
	}{
		{"update without instance", func(ctx context.Context) error {
			_, err := c.Update(ctx, meta, osbclient.UpdateRequest{ServiceID: "s"})
			return err
		}, "update needs an instance ID"},
		{"update without service", func(ctx context.Context) error {
			_, err := c.Update(ctx, meta, osbclient.UpdateRequest{InstanceID: "i"})
			return err
		}, "update needs a service ID"},
		{"update with non-object parameters", func(ctx context.Context) error {
			_, err := c.Update(ctx, meta, osbclient.UpdateRequest{InstanceID: "i", ServiceID: "s", Parameters: []byte(`"x"`)})
			return err
		}, "update parameters must be a JSON object"},
		{"deprovision without plan", func(ctx context.Context) error {
			_, err := c.Deprovision(ctx, meta, osbclient.DeprovisionRequest{InstanceID: "i", ServiceID: "s"})
			return err
		}, "deprovision needs a plan ID"},
		{"get instance without instance", func(ctx context.Context) error {
			_, err := c.GetInstance(ctx, meta, osbclient.GetInstanceRequest{})
			return err
		}, "get_instance needs an instance ID"},
		{"instance last operation without instance", func(ctx context.Context) error {
			_, err := c.InstanceLastOperation(ctx, meta, osbclient.InstanceLastOperationRequest{Operation: "x"})
			return err
		}, "instance_last_operation needs an instance ID"},
		{"bind with non-object parameters", func(ctx context.Context) error {
			req := bindReq("i", "b")
			req.Parameters = []byte(`[]`)
			_, err := c.Bind(ctx, meta, req)
			return err
		}, "bind parameters must be a JSON object"},
		{"unbind without binding", func(ctx context.Context) error {
			_, err := c.Unbind(ctx, meta, osbclient.UnbindRequest{InstanceID: "i", ServiceID: "s", PlanID: "p"})
			return err
		}, "unbind needs a binding ID"},
		{"get binding without binding", func(ctx context.Context) error {
			_, err := c.GetBinding(ctx, meta, osbclient.GetBindingRequest{InstanceID: "i"})
			return err
		}, "get_binding needs a binding ID"},
		{"binding last operation without binding", func(ctx context.Context) error {
			_, err := c.BindingLastOperation(ctx, meta, osbclient.BindingLastOperationRequest{InstanceID: "i"})
			return err
		}, "binding_last_operation needs a binding ID"},
		{"request id with a newline", func(ctx context.Context) error {
			_, err := c.Catalog(ctx, osbclient.RequestMeta{RequestID: "a\r\nX-Evil: 1"})
			return err
		}, "contains control characters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call(testCtx(t))
			require.ErrorIs(t, err, osbclient.ErrInvalidRequest)
			assert.Contains(t, err.Error(), tt.msg)
			assert.False(t, osbclient.Retryable(err))
			assert.False(t, osbclient.NeedsOrphanMitigation(err))
		})
	}
	assert.Zero(t, b.Count(), "nothing was sent")
}
