package brokered_test

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
	"github.com/lockstep-dev/lockstep/internal/controller/controllertest"
	"github.com/lockstep-dev/lockstep/internal/controller/resync"
	"github.com/lockstep-dev/lockstep/internal/journal"
)

// TestResync: what resync does the same way for every kind: the result of
// one fetch in InSync (and Ready), written only when it changed, and
// never a change at the broker.
func TestResync(t *testing.T) {
	tests := []struct {
		name        string
		unconfirmed bool
		catalog     func(*osbapi.Catalog)
		gone        bool // the broker does not hold the object
		broker      func(*fakebroker.Broker, kindCase)
		wantInSync  metav1.ConditionStatus // "": no InSync at all
		wantReason  string
		wantMsg     []string // {word} is the kind's word, {name} the object's name
		wantReady   metav1.ConditionStatus
		wantWrite   bool
		wantFetches int
	}{
		{name: "in sync: nothing is written", wantInSync: metav1.ConditionTrue, wantReason: "Committed", wantReady: metav1.ConditionTrue, wantFetches: 1},
		{name: "gone at the broker: not in sync, not ready", gone: true,
			wantInSync: metav1.ConditionFalse, wantReason: resync.ReasonGoneAtBroker, wantReady: metav1.ConditionFalse, wantWrite: true, wantFetches: 1,
			wantMsg: []string{`broker "acme" no longer holds {word} "{name}"`, "kubectl delete service{word} {name} -n team"}},
		{name: "broker failing", broker: func(b *fakebroker.Broker, k kindCase) {
			b.Always(k.fetch, fakebroker.Respond{Status: http.StatusServiceUnavailable, Description: "maintenance"})
		},
			wantInSync: metav1.ConditionFalse, wantReason: resync.ReasonBrokerUnreachable, wantReady: metav1.ConditionTrue, wantWrite: true, wantFetches: 1,
			wantMsg: []string{`lockstep could not read {word} "{name}" from broker "acme" to compare it`, "maintenance", "tries again in 1m0s"}},
		{name: "not retrievable: no fetch", catalog: func(c *osbapi.Catalog) {
			c.Services[0].InstancesRetrievable, c.Services[0].BindingsRetrievable = false, false
		},
			wantInSync: metav1.ConditionUnknown, wantReason: resync.ReasonNotRetrievable, wantReady: metav1.ConditionTrue, wantWrite: true,
			wantMsg: []string{"{word}s_retrievable is false", "drift cannot be detected"}},
		{name: "never confirmed by the broker: not fetched", unconfirmed: true},
	}
	for _, k := range kinds {
		for _, tt := range tests {
			t.Run(k.word+": "+tt.name, func(t *testing.T) {
				obj := k.object()
				if tt.unconfirmed {
					k.unconfirmed(obj)
				}
				h := newHarness(t, k, tt.catalog, obj)
				if !tt.gone {
					k.hold(h.Broker)
				}
				if tt.broker != nil {
					tt.broker(h.Broker, k)
				}
				before := h.resync(t)

				got := h.object(t)
				conds := k.conditions(got)
				assert.Equal(t, tt.wantFetches, h.Broker.Count(k.fetch), "fetches")
				assert.Equal(t, tt.wantWrite, got.GetResourceVersion() != before, "status written")
				assert.Zero(t, h.Broker.Count(fakebroker.OpProvision, fakebroker.OpUpdate, fakebroker.OpDeprovision, fakebroker.OpBind, fakebroker.OpUnbind),
					"nothing changed at the broker")
				inSync := meta.FindStatusCondition(conds, v1alpha1.ConditionInSync)
				if tt.wantInSync == "" {
					assert.Nil(t, inSync)
					return
				}
				var msgs []string
				for _, m := range tt.wantMsg {
					msgs = append(msgs, strings.NewReplacer("{word}", k.word, "{name}", k.name).Replace(m))
				}
				controllertest.AssertCondition(t, conds, v1alpha1.ConditionInSync, tt.wantInSync, tt.wantReason, msgs...)
				assert.Equal(t, tt.wantReady, meta.FindStatusCondition(conds, v1alpha1.ConditionReady).Status)
				status, err := json.Marshal(got)
				require.NoError(t, err)
				assert.NotContains(t, string(status), "hunter2", "the credentials a fetch returns go nowhere")
			})
		}
	}
}

// TestResyncOfAnObjectGoneAtItsBroker: one event says that the broker no
// longer holds the object, not one per fetch; once the broker holds it
// again, it is ready and in sync again.
func TestResyncOfAnObjectGoneAtItsBroker(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.word, func(t *testing.T) {
			h := newHarness(t, k, nil, k.object())
			h.resync(t)
			h.Clock.Step(interval)
			h.pass(t)
			require.Equal(t, 2, h.Broker.Count(k.fetch))
			var gone []string
			for _, e := range h.recorded() {
				if strings.Contains(e, resync.ReasonGoneAtBroker) {
					gone = append(gone, e)
				}
			}
			assert.Len(t, gone, 1, "one event: %v", gone)
			assert.False(t, meta.IsStatusConditionTrue(k.conditions(h.object(t)), v1alpha1.ConditionReady))

			k.hold(h.Broker)
			h.Clock.Step(interval)
			h.pass(t)
			conds := k.conditions(h.object(t))
			assert.True(t, meta.IsStatusConditionTrue(conds, v1alpha1.ConditionInSync), "in sync again")
			assert.True(t, meta.IsStatusConditionTrue(conds, v1alpha1.ConditionReady), "ready again")
		})
	}
}

// TestResyncWaitsForItsTurn: an object is first fetched at a random point
// of one interval, then one jittered interval later, and a watch event in
// between fetches nothing.
func TestResyncWaitsForItsTurn(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.word, func(t *testing.T) {
			h := newHarness(t, k, nil, k.object())
			k.hold(h.Broker)
			res := h.pass(t)
			if res.RequeueAfter > 0 {
				assert.LessOrEqual(t, res.RequeueAfter, interval, "first seen: due within one interval")
				assert.Zero(t, h.Broker.Count(k.fetch))
				h.Clock.Step(res.RequeueAfter)
				res = h.pass(t)
			}
			assert.Equal(t, 1, h.Broker.Count(k.fetch))
			assert.GreaterOrEqual(t, res.RequeueAfter, interval*9/10, "next fetch one jittered interval later")
			assert.LessOrEqual(t, res.RequeueAfter, interval)
			again := h.pass(t)
			assert.Equal(t, 1, h.Broker.Count(k.fetch))
			assert.Positive(t, again.RequeueAfter)
		})
	}
}

// TestResyncLeavesAnObjectWithAnOperationInFlight: while another operation
// holds the object's lock, what the broker answers says nothing about
// drift, and nothing is fetched.
func TestResyncLeavesAnObjectWithAnOperationInFlight(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.word, func(t *testing.T) {
			obj := k.object()
			h := newHarness(t, k, nil, obj)
			_, ok, err := h.Leases.Acquire(context.Background(), journal.KeyOf(k.kind, obj),
				&journal.Operation{Record: "op-1", Verb: v1alpha1.VerbUpdate, User: "alice", Started: time.Now()})
			require.NoError(t, err)
			require.True(t, ok)
			h.resync(t)
			assert.Zero(t, h.Broker.Count(k.fetch), "the operations reconciler follows the change in flight")
			assert.True(t, meta.IsStatusConditionTrue(k.conditions(h.object(t)), v1alpha1.ConditionInSync))
		})
	}
}

// staleCache is a cache that has not caught up: it still gives snapshot
// for the object key names, and lists no record named in hidden.
type staleCache struct {
	client.Client
	key      types.NamespacedName
	snapshot client.Object
	hidden   map[string]bool
}

func (c *staleCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if key == c.key && c.snapshot != nil && reflect.TypeOf(obj) == reflect.TypeOf(c.snapshot) {
		reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(c.snapshot.DeepCopyObject()).Elem())
		return nil
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

func (c *staleCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := c.Client.List(ctx, list, opts...); err != nil {
		return err
	}
	if ops, ok := list.(*v1alpha1.BrokerOperationList); ok {
		ops.Items = slices.DeleteFunc(ops.Items, func(op v1alpha1.BrokerOperation) bool { return c.hidden[op.Name] })
	}
	return nil
}

// TestResyncJudgesTheBrokerAgainstWhatIsCurrent: a change that reached
// the broker after the cache was read (here: one the API server holds,
// the cache not yet) is no drift: nothing is reported or corrected, and
// the object is compared again in a moment; once the cache caught up,
// the broker's answer is judged.
func TestResyncJudgesTheBrokerAgainstWhatIsCurrent(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.word, func(t *testing.T) {
			h := newHarness(t, k, nil, k.object())
			cache := &staleCache{Client: h.Client, key: k.key()}
			h.Config.Client = cache
			h.R = k.new(h.Config)
			h.pass(t)
			h.Clock.Step(interval)

			cache.snapshot = h.object(t)
			live := h.object(t)
			live.SetAnnotations(map[string]string{"team": "payments"})
			require.NoError(t, h.Client.Update(context.Background(), live))
			before := h.object(t).GetResourceVersion()

			res := h.pass(t)
			assert.Equal(t, 1, h.Broker.Count(k.fetch))
			assert.Equal(t, time.Second, res.RequeueAfter, "compared again in a moment")
			assert.Equal(t, before, h.object(t).GetResourceVersion(), "nothing written")
			assert.Empty(t, h.recorded(), "no event")

			cache.snapshot = nil
			h.pass(t)
			assert.Equal(t, 2, h.Broker.Count(k.fetch))
			controllertest.AssertCondition(t, k.conditions(h.object(t)), v1alpha1.ConditionInSync, metav1.ConditionFalse, resync.ReasonGoneAtBroker)
		})
	}
}

// TestResyncUndoesNoChangeTheCacheHasNotSeen: an update the broker
// carried out, whose record the cache does not list yet, is not undone
// as drift; once the cache lists it, the instance is in sync.
func TestResyncUndoesNoChangeTheCacheHasNotSeen(t *testing.T) {
	k := kinds[0]
	obj := confirmedInstance()
	obj.Spec.PlanName, obj.Generation = "large", 2
	h := newHarness(t, k, nil, obj)
	cache := &staleCache{Client: h.Client, hidden: map[string]bool{"db-update-1": true}}
	h.Config.Client = cache
	h.R = k.new(h.Config)
	h.Broker.PutInstance(fakebroker.Instance{ID: "ext-1", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanLargeID, DashboardURL: dashboard})
	h.pass(t)
	h.Clock.Step(interval)
	record := &v1alpha1.BrokerOperation{
		ObjectMeta: metav1.ObjectMeta{Name: "db-update-1", Namespace: "team", Labels: map[string]string{journal.LabelTargetUID: string(k.uid)}},
		Spec: v1alpha1.BrokerOperationSpec{Target: k.target(), Verb: v1alpha1.VerbUpdate, BrokerName: "acme", ServiceID: fakebroker.ServiceDBID,
			PlanID: fakebroker.PlanLargeID, Requester: v1alpha1.Requester{Username: "alice"}, Generation: 2,
			SpecHash: journal.SpecHash(journal.SpecOf(obj))},
	}
	record.Status.Phase = v1alpha1.PhaseCommitted
	require.NoError(t, h.Client.Create(context.Background(), record))

	res := h.pass(t)
	assert.Equal(t, 1, h.Broker.Count(k.fetch))
	assert.Zero(t, h.Broker.Count(fakebroker.OpUpdate), "the broker is not asked to undo the update")
	assert.Equal(t, time.Second, res.RequeueAfter, "compared again in a moment")

	cache.hidden = nil
	h.pass(t)
	assert.Equal(t, 2, h.Broker.Count(k.fetch))
	assert.Zero(t, h.Broker.Count(fakebroker.OpUpdate))
	assert.True(t, meta.IsStatusConditionTrue(k.conditions(h.object(t)), v1alpha1.ConditionInSync))
}
