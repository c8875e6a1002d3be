package admission

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/catalog"
	"github.com/lockstep-dev/lockstep/internal/controller/operations"
	"github.com/lockstep-dev/lockstep/internal/journal"
	"github.com/lockstep-dev/lockstep/internal/osb/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/osbclient"
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
	held, err := h.leases.HeldBy(context.Background(), journal.Key{Kind: "ServiceInstance", Namespace: "team", Name: "db"})
	require.NoError(t, err)
	return held
}

// operations is the operations reconciler over the harness's API server and
// broker, with a clock far enough ahead that every Pending record is due.
func (h *harness) operations(t *testing.T) *operations.Operations {
	t.Helper()
	c, err := osbclient.New(h.broker.Config())
	require.NoError(t, err)
	cat := fakebroker.DefaultCatalog()
	cache := catalog.NewCache(time.Hour)
	cache.Store(catalog.NewEntry("acme", c, &cat, nil, time.Now()))
	later := func() time.Time { return time.Now().Add(time.Hour) }
	return &operations.Operations{
		Client: h.client, Catalogs: cache, Journal: &journal.Journal{Client: h.client},
		Leases: &journal.Leases{Client: h.client, Duration: time.Minute, Now: later},
		Poll:   time.Millisecond, Grace: time.Second, PendingTimeout: 30 * time.Second, Timeout: 5 * time.Second, Now: later,
	}
}

// The lock and the record are written at the same time. Every way that
// can go wrong leaves the broker uncalled, the user told to retry, and
// nothing behind: no stray record, no lock.
func TestCarrierLockAndRecordWrittenTogether(t *testing.T) {
	tests := []struct {
		name    string
		fail    func(*faults)
		wantMsg string
	}{
		{"the record cannot be written", func(f *faults) { f.createRecord.Store(true) },
			"could not record the operation before calling the broker"},
		{"the lock cannot be taken", func(f *faults) { f.createLease.Store(true) },
			`could not take the lock of ServiceInstance "db"`},
		{"neither can be written", func(f *faults) { f.createRecord.Store(true); f.createLease.Store(true) },
			`could not take the lock of ServiceInstance "db"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &faults{}
			h := newInterceptedHarness(t, f.funcs())
			tt.fail(f)
			_, err := h.admit(admissionv1.Create, nil, instance("small", ""), false)
			require.Error(t, err)
			var status apierrors.APIStatus
			require.ErrorAs(t, err, &status)
			assert.Equal(t, int32(http.StatusServiceUnavailable), status.Status().Code)
			assert.Contains(t, err.Error(), tt.wantMsg)
			assert.Contains(t, err.Error(), "nothing was changed: retry")

			assert.Empty(t, h.broker.Calls(), "the broker is not called")
			assert.Empty(t, h.records(t), "no record is left behind")
			assert.Empty(t, h.lockHeldBy(t), "no lock is left behind")

			*f = faults{}
			_, err = h.admit(admissionv1.Create, nil, instance("small", ""), false)
			require.NoError(t, err, "the retry goes through")
			assert.Equal(t, 1, h.broker.Count(fakebroker.OpProvision))
		})
	}
}

// A change that loses the lock wrote its record for nothing. When it
// cannot even delete it (the API server went away, or the webhook
// stopped), the record stays Pending. The operations reconciler must then
// delete it without calling the broker: above all it must not mitigate it
// as a lost provision, which would deprovision the instance the winner
// created under the same external id.
func TestCarrierRecordOfALostLockIsNeverMitigated(t *testing.T) {
	f := &faults{}
	h := newInterceptedHarness(t, f.funcs())
	h.broker.Script(fakebroker.OpProvision, fakebroker.Respond{Async: &fakebroker.Async{InProgressPolls: 1 << 20}})
	h.validator.Budget = 50 * time.Millisecond
	_, err := h.admit(admissionv1.Create, nil, instance("small", ""), false)
	require.NoError(t, err, "the winner's provision is still running at the broker")
	winner := h.records(t)
	require.Len(t, winner, 1)

	f.deleteRecord.Store(true)
	_, err = h.admit(admissionv1.Create, nil, instance("small", ""), false)
	require.Error(t, err)
	assert.True(t, apierrors.IsConflict(err), err.Error())
	assert.Equal(t, 1, h.broker.Count(fakebroker.OpProvision), "the loser never reached the broker")
	require.Len(t, h.records(t), 2, "the loser's record could not be deleted")
	f.deleteRecord.Store(false)

	var loser v1alpha1.BrokerOperation
	for _, op := range h.records(t) {
		if op.Name != winner[0].Name {
			loser = op
		}
	}
	assert.True(t, journal.IsPending(&loser))
	_, err = h.operations(t).Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "team", Name: loser.Name}})
	require.NoError(t, err)

	records := h.records(t)
	require.Len(t, records, 1, "the loser's record is deleted")
	assert.Equal(t, winner[0].Name, records[0].Name)
	assert.Equal(t, 1, h.broker.Count(fakebroker.OpProvision))
	assert.Zero(t, h.broker.Count(fakebroker.OpDeprovision), "nothing is mitigated")
	assert.Equal(t, winner[0].Name, h.lockHeldBy(t), "the winner keeps its lock")
}

// A refusal whose answer cannot be written keeps the lock: the lock naming
// a Pending record is how the operations reconciler knows the broker was
// called. It then settles the record and releases the lock.
func TestCarrierRefusalWhoseAnswerIsLostKeepsTheLock(t *testing.T) {
	f := &faults{}
	h := newInterceptedHarness(t, f.funcs())
	h.broker.PutInstance(fakebroker.Instance{ID: "ext-1", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID})
	h.broker.Script(fakebroker.OpUpdate, fakebroker.Respond{Status: http.StatusUnprocessableEntity, Description: "plan change not supported"})
	f.recordAnswer.Store(true)
	_, err := h.admit(admissionv1.Update, instance("small", ""), instance("large", ""), false)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "plan change not supported")
	f.recordAnswer.Store(false)

	records := h.records(t)
	require.Len(t, records, 1)
	assert.True(t, journal.IsPending(&records[0]), "the answer was not written")
	assert.Equal(t, records[0].Name, h.lockHeldBy(t), "the lock stays with the Pending record")

	r := h.operations(t)
	for range 2 { // settle, then finish (the watch of the record asks again)
		_, err = r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "team", Name: records[0].Name}})
		require.NoError(t, err)
	}
	records = h.records(t)
	require.Len(t, records, 1)
	assert.Equal(t, v1alpha1.PhaseFailed, records[0].Status.Phase, "settled: the outcome is unknown to lockstep")
	assert.Empty(t, h.lockHeldBy(t), "and the lock released")
}
