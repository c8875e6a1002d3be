package osbclient_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/internal/osb/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/osbclient"
)

func TestRemove(t *testing.T) {
	instance := osbclient.Removal{InstanceID: "i1", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID}
	binding := osbclient.Removal{InstanceID: "i1", BindingID: "b1", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID}
	tests := []struct {
		name     string
		removal  osbclient.Removal
		setup    func(b *fakebroker.Broker)
		wantDone bool
		wantErr  string
		// wantHeld: the broker still holds it afterwards (checked where the
		// answer is not scripted).
		wantHeld bool
	}{
		{name: "deprovision answered 200", removal: instance, wantDone: true},
		{name: "deprovision of an instance already gone (410)", removal: instance, wantDone: true,
			setup: func(b *fakebroker.Broker) { b.ResetState() }},
		{name: "async deprovision polled to its end", removal: instance, wantDone: true,
			setup: func(b *fakebroker.Broker) {
				b.Script(fakebroker.OpDeprovision, fakebroker.Respond{Async: &fakebroker.Async{InProgressPolls: 2}})
			}},
		{name: "async deprovision still running at the deadline", removal: instance, wantHeld: true,
			setup: func(b *fakebroker.Broker) {
				b.Script(fakebroker.OpDeprovision, fakebroker.Respond{Async: &fakebroker.Async{InProgressPolls: 1 << 20}})
			}},
		{name: "deprovision refused", removal: instance, wantErr: "still in use", wantHeld: true,
			setup: func(b *fakebroker.Broker) {
				b.Script(fakebroker.OpDeprovision, fakebroker.Respond{Status: 422, Description: "still in use"})
			}},
		{name: "unbind answered 200", removal: binding, wantDone: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := fakebroker.New(t)
			b.PutInstance(fakebroker.Instance{ID: "i1", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID})
			if tt.removal.BindingID != "" {
				b.PutBinding(fakebroker.Binding{InstanceID: "i1", ID: "b1", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID})
			}
			if tt.setup != nil {
				tt.setup(b)
			}
			c := newClient(t, b)
			ctx, cancel := context.WithTimeout(testCtx(t), 300*time.Millisecond)
			defer cancel()
			done, err := c.Remove(ctx, meta, tt.removal, osbclient.PollOptions{MinInterval: time.Millisecond, MaxInterval: 5 * time.Millisecond})
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, tt.wantDone, done)
			var held bool
			if tt.removal.BindingID != "" {
				_, held = b.Binding("i1", "b1")
			} else {
				_, held = b.Instance("i1")
			}
			if tt.setup == nil {
				assert.Equal(t, tt.wantHeld, held)
			}
		})
	}
}
