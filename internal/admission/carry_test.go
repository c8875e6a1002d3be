package admission

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/broker/osbclient"
	"github.com/lockstep-dev/lockstep/internal/catalog"
	"github.com/lockstep-dev/lockstep/internal/controller/controllertest"
	"github.com/lockstep-dev/lockstep/internal/controller/operations"
	"github.com/lockstep-dev/lockstep/internal/journal"
)

// faults makes chosen writes of the harness's API server fail while set.
type faults struct {
	createLease, createRecord, deleteRecord, recordAnswer atomic.Bool
}

var errAPIServerDown = errors.New("connection refused")

func (f *faults) funcs() interceptor.Funcs {
	return interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			switch obj.(type) {
			case *coordinationv1.Lease:
				if f.createLease.Load() {
					return errAPIServerDown
				}
			case *v1alpha1.BrokerOperation:
				if f.createRecord.Load() {
					return errAPIServerDown
				}
			}
			return c.Create(ctx, obj, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			if _, ok := obj.(*v1alpha1.BrokerOperation); ok && f.deleteRecord.Load() {
				return errAPIServerDown
			}
			return c.Delete(ctx, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			if _, ok := obj.(*v1alpha1.BrokerOperation); ok && f.recordAnswer.Load() {
				return errAPIServerDown
			}
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	}
}

func (h *harness) records(t *testing.T) []v1alpha1.BrokerOperation {
	t.Helper()
	var ops v1alpha1.BrokerOperationList
	require.NoError(t, h.client.List(context.Background(), &ops))
	return ops.Items
}

func (h *harness) lockHeldBy(t *testing.T) string {
	t.Helper()
	held, err := h.leases.HeldBy(context.Background(), journal.Key{Kind: v1alpha1.KindServiceInstance, Namespace: "team", Name: "db", ExternalID: "ext-1"})
	require.NoError(t, err)
	return held
}

// operations is the operations reconciler over the harness's API server and
// broker, with a clock far enough ahead that every Pending record is due.
func (h *harness) operations(t *testing.T) *operations.Reconciler {
	t.Helper()
	c, err := osbclient.New(h.broker.Config())
	require.NoError(t, err)
	cat := fakebroker.DefaultCatalog()
	cache := catalog.NewCache(time.Hour)
	cache.Store(catalog.NewEntry("acme", c, &cat, nil, time.Now()))
	later := clocktesting.NewFakePassiveClock(time.Now().Add(time.Hour))
	return &operations.Reconciler{
		Client: h.client, Catalogs: cache, Journal: &journal.Journal{Client: h.client},
		Leases:   &journal.Leases{Client: h.client, Duration: time.Minute, Clock: later},
		Protocol: controllertest.Protocol(h.client, ""),
		Poll:     time.Millisecond, Grace: time.Second, PendingTimeout: 30 * time.Second, Timeout: 5 * time.Second, Clock: later,
	}
}

// settle runs what the elected replica runs after a crash until nothing
// is left to do: Locks writes the records the locks carry, Operations takes
// every record to a final phase.
func (h *harness) settle(t *testing.T) {
	t.Helper()
	r := h.operations(t)
	locks := &operations.Locks{Leases: r.Leases, Journal: r.Journal, After: 30 * time.Second, Clock: r.Clock}
	_, err := locks.Scan(context.Background())
	require.NoError(t, err)
	for range 10 {
		busy := false
		for _, op := range h.records(t) {
			if op.Status.Phase == v1alpha1.PhaseCommitted || op.Status.Phase == v1alpha1.PhaseCompensated ||
				op.Status.Phase == v1alpha1.PhaseFailed {
				if op.Name == h.lockHeldBy(t) {
					busy = true // released by its next reconcile
				} else {
					continue
				}
			}
			busy = true
			_, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: op.Namespace, Name: op.Name}})
			require.NoError(t, err)
		}
		if !busy {
			return
		}
	}
	t.Fatal("the operations reconciler did not settle every record")
}

// The reply waits for one API server write: the object's lock, which
// carries the operation's record. The record is written after the reply,
// and a refusal's lock released once its record says so.
func TestCarrierWritesOnceBeforeTheReply(t *testing.T) {
	tests := []struct {
		name      string
		op        admissionv1.Operation
		old, new  Instance
		script    func(*fakebroker.Broker)
		wantPhase v1alpha1.OperationPhase
		wantLock  bool
	}{
		{"provision", admissionv1.Create, nil, instance("small", ""), nil, v1alpha1.PhaseSucceeded, true},
		{"refused update", admissionv1.Update, instance("small", ""), instance("large", ""), func(b *fakebroker.Broker) {
			b.Script(fakebroker.OpUpdate, fakebroker.Respond{Status: http.StatusUnprocessableEntity, Description: "plan change not supported"})
		}, v1alpha1.PhaseFailed, false},
		{"provision that needs orphan mitigation", admissionv1.Create, nil, instance("small", ""), func(b *fakebroker.Broker) {
			b.Script(fakebroker.OpProvision, fakebroker.Respond{Status: http.StatusInternalServerError})
		}, v1alpha1.PhaseOrphaned, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var writes []string
			h := newInterceptedHarness(t, interceptor.Funcs{
				Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
					writes = append(writes, fmt.Sprintf("create %T", obj))
					return c.Create(ctx, obj, opts...)
				},
			})
			h.broker.PutInstance(fakebroker.Instance{ID: "ext-1", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID})
			if tt.script != nil {
				tt.script(h.broker)
			}
			c := h.validator.Steps[len(h.validator.Steps)-1].(*instanceBroker).carry
			c.protocol.Carrier.After = nil // the answer's writes are then made before the reply: count them apart
			c.protocol.Carrier.Crash = func(p journal.Point) bool {
				if p == journal.BeforeReply {
					assert.Equal(t, []string{"create *v1.Lease"}, writes, "one write before the reply: the lock")
				}
				return false
			}
			_, _ = h.admit(tt.op, tt.old, tt.new, false)
			records := h.records(t)
			require.Len(t, records, 1)
			assert.Equal(t, tt.wantPhase, records[0].Status.Phase)
			assert.Equal(t, "alice", records[0].Spec.Requester.Username)
			if tt.wantLock {
				assert.Equal(t, records[0].Name, h.lockHeldBy(t), "kept for the operations reconciler")
			} else {
				assert.Empty(t, h.lockHeldBy(t), "released once the refusal is recorded")
			}
		})
	}
}

// Lockstep may stop at any point of an operation. Whatever the broker did,
// the operations reconciler closes it: the record is written from the lock,
// and settled from what the API server holds.
func TestCarrierCrashPointsAreClosed(t *testing.T) {
	const (
		never    = "never"    // the API server does not hold the change
		persists = "persists" // the API server holds the change
	)
	tests := []struct {
		point      journal.Point
		op         admissionv1.Operation
		apiserver  string
		wantCalls  int // broker calls of the operation's verb before the crash
		wantRecord v1alpha1.OperationPhase
		wantBroker string // the plan the broker holds; "" none
	}{
		{journal.BeforeLock, admissionv1.Create, never, 0, "", ""},
		{journal.BeforeCall, admissionv1.Create, never, 0, v1alpha1.PhaseCompensated, ""},
		{journal.BeforeReply, admissionv1.Create, never, 1, v1alpha1.PhaseCompensated, ""},
		{journal.BeforeAnswer, admissionv1.Create, persists, 1, v1alpha1.PhaseCommitted, fakebroker.PlanSmallID},
		{journal.BeforeCall, admissionv1.Update, never, 0, v1alpha1.PhaseCompensated, fakebroker.PlanSmallID},
		{journal.BeforeReply, admissionv1.Update, never, 1, v1alpha1.PhaseCompensated, fakebroker.PlanSmallID},
		{journal.BeforeAnswer, admissionv1.Update, persists, 1, v1alpha1.PhaseCommitted, fakebroker.PlanLargeID},
	}
	for _, tt := range tests {
		t.Run(string(tt.op)+" "+string(tt.point), func(t *testing.T) {
			old := instance("small", "", func(si *v1alpha1.ServiceInstance) { si.Generation = 1 })
			updated := instance("large", "", func(si *v1alpha1.ServiceInstance) { si.Generation = 2 })
			created := instance("small", "", func(si *v1alpha1.ServiceInstance) { si.Generation = 1 })
			var objects []runtime.Object
			verb := fakebroker.OpProvision
			if tt.op == admissionv1.Update {
				objects = append(objects, old.DeepCopy())
				verb = fakebroker.OpUpdate
			}
			h := newHarness(t, objects...)
			if tt.op == admissionv1.Update {
				h.broker.PutInstance(fakebroker.Instance{ID: "ext-1", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID})
			}
			c := h.validator.Steps[len(h.validator.Steps)-1].(*instanceBroker).carry
			c.protocol.Carrier.Crash = func(p journal.Point) bool { return p == tt.point }

			var err error
			if tt.op == admissionv1.Create {
				_, err = h.admit(tt.op, nil, created, false)
			} else {
				_, err = h.admit(tt.op, old, updated, false)
			}
			if tt.point != journal.BeforeAnswer {
				require.Error(t, err, "lockstep stopped before it replied")
			}
			if tt.apiserver == persists {
				require.NoError(t, err)
				if tt.op == admissionv1.Create {
					require.NoError(t, h.client.Create(context.Background(), created.DeepCopy()))
				} else {
					current := &v1alpha1.ServiceInstance{}
					require.NoError(t, h.client.Get(context.Background(), client.ObjectKeyFromObject(old), current))
					current.Spec, current.Generation = updated.Spec, 2
					require.NoError(t, h.client.Update(context.Background(), current))
				}
			}
			assert.Empty(t, h.records(t), "no record is written before the reply")
			assert.Equal(t, tt.wantCalls, h.broker.Count(verb), "the broker was called as often as the crash allowed")

			h.settle(t)
			records := h.records(t)
			if tt.wantRecord == "" {
				assert.Empty(t, records, "nothing was written")
			} else {
				require.Len(t, records, 1, "the record is written from the lock")
				assert.Equal(t, tt.wantRecord, records[0].Status.Phase)
				assert.Equal(t, "alice", records[0].Spec.Requester.Username, "attributable to who asked")
			}
			assert.Empty(t, h.lockHeldBy(t), "the lock is released")
			held, ok := h.broker.Instance("ext-1")
			if tt.wantBroker == "" {
				assert.False(t, ok, "the broker holds nothing, as the API server")
			} else {
				require.True(t, ok)
				assert.Equal(t, tt.wantBroker, held.PlanID, "the broker holds what the API server holds")
			}
		})
	}
}

// When the replica serving a webhook call stops after the broker call, the
// API server asks the webhooks again for the same request. The retry finds
// the lock held by its own first try, whose outcome nobody knows yet: it
// is told that the outcome is unknown (never that another change is in
// flight, which claims the broker holds what it held), the broker is not
// asked again, and the operations reconciler follows the first try to
// its end.
func TestCarrierRetryOfARequestCutShortIsAnsweredUnknown(t *testing.T) {
	persisted := instance("small", "", func(si *v1alpha1.ServiceInstance) { si.Generation = 1 })
	h := newHarness(t, persisted.DeepCopy())
	h.broker.PutInstance(fakebroker.Instance{ID: "ext-1", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID})
	c := h.validator.Steps[len(h.validator.Steps)-1].(*instanceBroker).carry
	c.protocol.Carrier.Crash = func(p journal.Point) bool { return p == journal.BeforeReply }
	_, err := h.admit(admissionv1.Delete, persisted, nil, false)
	require.Error(t, err, "the replica stopped after the broker call, before it replied")
	require.Equal(t, 1, h.broker.Count(fakebroker.OpDeprovision))
	c.protocol.Carrier.Crash = nil

	_, err = h.admit(admissionv1.Delete, persisted, nil, false)
	require.Error(t, err)
	var status apierrors.APIStatus
	require.ErrorAs(t, err, &status)
	msg := status.Status().Message
	assert.Contains(t, msg, "the outcome is unknown")
	assert.Contains(t, msg, "this very change")
	assert.NotContains(t, msg, "another change")
	assert.Equal(t, 1, h.broker.Count(fakebroker.OpDeprovision), "the broker is not asked again")

	h.settle(t)
	records := h.records(t)
	require.Len(t, records, 1, "one operation, written from the lock")
	assert.Equal(t, v1alpha1.PhaseCommitted, records[0].Status.Phase)
	current := &v1alpha1.ServiceInstance{}
	err = h.client.Get(context.Background(), client.ObjectKeyFromObject(persisted), current)
	assert.True(t, apierrors.IsNotFound(err) || current.DeletionTimestamp != nil, "the delete the broker carried out is finished")
	assert.Empty(t, h.lockHeldBy(t), "the lock is released")
}
