package operations

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/journal"
)

// lockCutShort takes the lock of instance team/name for an operation of
// verb by alice, as admission does before the broker call, and writes no
// record, as when lockstep stops then; it returns the record the lock
// carries.
func (h *opsHarness) lockCutShort(t *testing.T, name string, verb v1alpha1.Verb) *v1alpha1.BrokerOperation {
	t.Helper()
	si := &v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name, UID: types.UID("uid-" + name), Generation: 1}}
	in := journal.Intent{ID: "op-" + name, Target: si, Kind: v1alpha1.KindServiceInstance, ExternalID: "ext-" + name, Broker: "acme",
		Verb: verb, User: authenticationv1.UserInfo{Username: "alice"}, SpecHash: journal.SpecHash(si.Spec)}
	draft := h.r.Journal.Draft(in)
	_, ok, err := h.r.Leases.Acquire(context.Background(), journal.KeyOf(v1alpha1.KindServiceInstance, si),
		&journal.Operation{ID: in.ID, Verb: in.Verb, User: "alice", Started: h.clock.Now(), Record: draft.Name, Carried: draft})
	require.NoError(t, err)
	require.True(t, ok)
	return draft
}

// Locks writes the record a lock carries once the lock is older than an
// admission can last and nobody wrote the record; the operations
// reconciler then settles it.
func TestLocksRestoreTheRecordsOfOperationsCutShort(t *testing.T) {
	tests := []struct {
		name      string
		age       time.Duration
		written   bool // the record exists already
		wantWrote int
	}{
		{"an admission still under way", 5 * time.Second, false, 0},
		{"cut short", time.Minute, false, 1},
		{"record written after the reply", time.Minute, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newOpsHarness(t)
			ctx := context.Background()
			draft := h.lockCutShort(t, "db", v1alpha1.VerbProvision)
			if tt.written {
				require.NoError(t, h.r.Journal.Write(ctx, draft.DeepCopy()))
			}

			later := clocktesting.NewFakePassiveClock(h.clock.Now().Add(tt.age))
			locks := &Locks{Leases: h.r.Leases, Journal: h.r.Journal, After: 30 * time.Second, Clock: later}
			wrote, err := locks.Scan(ctx)
			require.NoError(t, err)
			assert.Equal(t, tt.wantWrote, wrote)
			again, err := locks.Scan(ctx)
			require.NoError(t, err)
			assert.Zero(t, again, "a record is written once")
			if tt.wantWrote > 0 || tt.written {
				rec, err := h.r.Journal.Find(ctx, "team", draft.Name)
				require.NoError(t, err)
				require.NotNil(t, rec)
				assert.True(t, journal.IsPending(rec))
				assert.Equal(t, "alice", rec.Spec.Requester.Username)
			}
		})
	}
}

// One lock whose record cannot be written never keeps the others from
// being restored: the scan reports it, goes on, and tries it again next
// time.
func TestLocksScanGoesOnPastALockItCannotRestore(t *testing.T) {
	h := newOpsHarness(t)
	ctx := context.Background()
	var drafts []*v1alpha1.BrokerOperation
	for _, name := range []string{"db", "cache", "queue"} {
		drafts = append(drafts, h.lockCutShort(t, name, v1alpha1.VerbDeprovision))
	}
	// The first record the scan writes, whichever lock it comes from,
	// is refused by the API server.
	refused := ""
	failing := interceptor.NewClient(h.client.(client.WithWatch), interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if _, ok := obj.(*v1alpha1.BrokerOperation); ok && refused == "" {
				refused = obj.GetName()
				return fmt.Errorf("namespaces %q not found", obj.GetNamespace())
			}
			return c.Create(ctx, obj, opts...)
		},
	})
	j := journal.Journal{Client: failing, Namespace: h.r.Journal.Namespace, Recorder: h.r.Journal.Recorder, Clock: h.r.Journal.Clock}
	later := clocktesting.NewFakePassiveClock(h.clock.Now().Add(time.Minute))
	locks := &Locks{Leases: h.r.Leases, Journal: &j, After: 30 * time.Second, Clock: later}

	wrote, err := locks.Scan(ctx)
	require.NotEmpty(t, refused, "one record was refused")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not found", "the error says why")
	assert.Equal(t, 2, wrote, "the other locks' records are written all the same")
	for _, d := range drafts {
		rec, err := h.r.Journal.Find(ctx, "team", d.Name)
		require.NoError(t, err)
		assert.Equal(t, d.Name != refused, rec != nil, "record %s", d.Name)
	}

	wrote, err = locks.Scan(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, wrote, "the next scan writes the one left")
}
