package operations

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/journal"
)

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
			si := &v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "db", UID: "uid-1", Generation: 1}}
			in := journal.Intent{ID: "0123456789", Target: si, Kind: v1alpha1.KindServiceInstance, ExternalID: "ext-1", Broker: "acme",
				Verb: v1alpha1.VerbProvision, User: authenticationv1.UserInfo{Username: "alice"}, SpecHash: journal.SpecHash(si.Spec)}
			draft := h.r.Journal.Draft(in)
			_, ok, err := h.r.Leases.Acquire(ctx, journal.KeyOf(v1alpha1.KindServiceInstance, si),
				&journal.Operation{ID: in.ID, Verb: in.Verb, User: "alice", Started: h.clock.Now(), Record: draft.Name, Intent: draft})
			require.NoError(t, err)
			require.True(t, ok)
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
