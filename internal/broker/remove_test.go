package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/internal/broker"
	"github.com/lockstep-dev/lockstep/internal/broker/brokertest"
)

func TestRemove(t *testing.T) {
	instance := broker.Removal{InstanceID: "i1", ServiceID: brokertest.ServiceDBID, PlanID: brokertest.PlanSmallID}
	binding := broker.Removal{InstanceID: "i1", BindingID: "b1", ServiceID: brokertest.ServiceDBID, PlanID: brokertest.PlanSmallID}
	tests := []struct {
		name     string
		removal  broker.Removal
		setup    func(b *brokertest.Broker)
		wantDone bool
		wantErr  string
		// wantHeld: the broker still holds it afterwards (checked where the
		// answer is not scripted).
		wantHeld bool
	}{
		{name: "deprovision answered 200", removal: instance, wantDone: true},
		{name: "deprovision of an instance already gone (410)", removal: instance, wantDone: true,
			setup: func(b *brokertest.Broker) { b.ResetState() }},
		{name: "async deprovision polled to its end", removal: instance, wantDone: true,
			setup: func(b *brokertest.Broker) {
				b.Script(brokertest.OpDeprovision, brokertest.Respond{Async: &brokertest.Async{InProgressPolls: 2}})
			}},
		{name: "async deprovision still running at the deadline", removal: instance, wantHeld: true,
			setup: func(b *brokertest.Broker) {
				b.Script(brokertest.OpDeprovision, brokertest.Respond{Async: &brokertest.Async{InProgressPolls: 1 << 20}})
			}},
		{name: "deprovision refused", removal: instance, wantErr: "still in use", wantHeld: true,
			setup: func(b *brokertest.Broker) {
				b.Script(brokertest.OpDeprovision, brokertest.Respond{Status: 422, Description: "still in use"})
			}},
		{name: "unbind answered 200", removal: binding, wantDone: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := brokertest.New(t)
			b.PutInstance(brokertest.Instance{ID: "i1", ServiceID: brokertest.ServiceDBID, PlanID: brokertest.PlanSmallID})
			if tt.removal.BindingID != "" {
				b.PutBinding(brokertest.Binding{InstanceID: "i1", ID: "b1", ServiceID: brokertest.ServiceDBID, PlanID: brokertest.PlanSmallID})
			}
			if tt.setup != nil {
				tt.setup(b)
			}
			c := newClient(t, b)
			ctx, cancel := context.WithTimeout(testCtx(t), 300*time.Millisecond)
			defer cancel()
			done, err := c.Remove(ctx, meta, tt.removal, broker.PollOptions{MinInterval: time.Millisecond, MaxInterval: 5 * time.Millisecond})
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
