package journal

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

func newLeases(t *testing.T, clk clock.PassiveClock) *Leases {
	t.Helper()
	scheme := runtime.NewScheme()
	require.NoError(t, coordinationv1.AddToScheme(scheme))
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	c := fake.NewClientBuilder().WithScheme(scheme).WithIndex(&v1alpha1.BrokerOperation{}, TargetUIDIndex, TargetUID).Build()
	return &Leases{Client: c, Duration: time.Minute, Clock: clk}
}

func TestLeasesOneHolderPerObject(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	l := newLeases(t, clk)
	ctx := context.Background()
	key := Key{Kind: "ServiceInstance", Namespace: "team", Name: "db"}
	a := &Operation{Record: "db-update-a", Verb: v1alpha1.VerbUpdate, User: "alice", Started: clk.Now()}
	b := &Operation{Record: "db-update-b", Verb: v1alpha1.VerbUpdate, User: "bob", Started: clk.Now()}

	_, ok, err := l.Acquire(ctx, key, a)
	require.NoError(t, err)
	require.True(t, ok)
	holder, ok, err := l.Acquire(ctx, key, b)
	require.NoError(t, err)
	assert.False(t, ok)
	assert.Equal(t, "db-update-a", holder.Record)
	assert.Equal(t, "alice", holder.User)
	assert.Equal(t, v1alpha1.VerbUpdate, holder.Verb)
	assert.Equal(t, "team", holder.Namespace, "a holder names the object it changes")
	assert.Equal(t, "db", holder.Name)

	_, ok, _ = l.Acquire(ctx, Key{Kind: "ServiceBinding", Namespace: "team", Name: "db"}, b)
	assert.True(t, ok, "a binding named like the instance has its own lock")

	require.NoError(t, l.Release(ctx, key, "db-update-b"), "not the holder: no effect")
	_, ok, _ = l.Acquire(ctx, key, b)
	assert.False(t, ok)
	require.NoError(t, l.Release(ctx, key, "db-update-a"))
	_, ok, _ = l.Acquire(ctx, key, b)
	assert.True(t, ok)
}

func TestLeaseOfADeadHolderExpires(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	l := newLeases(t, clk)
	ctx := context.Background()
	key := Key{Kind: "ServiceInstance", Namespace: "team", Name: "db"}
	_, ok, _ := l.Acquire(ctx, key, &Operation{Record: "dead", Started: clk.Now()})
	require.True(t, ok)

	clk.Step(59 * time.Second)
	_, ok, _ = l.Acquire(ctx, key, &Operation{Record: "next", Started: clk.Now()})
	assert.False(t, ok, "still held")
	require.NoError(t, l.Renew(ctx, key, "dead"))
	clk.Step(59 * time.Second)
	_, ok, _ = l.Acquire(ctx, key, &Operation{Record: "next", Started: clk.Now()})
	assert.False(t, ok, "renewal extends the lock")

	clk.Step(2 * time.Second)
	holder, err := l.Holder(ctx, key)
	require.NoError(t, err)
	assert.Nil(t, holder, "expired")
	_, ok, _ = l.Acquire(ctx, key, &Operation{Record: "next", Started: clk.Now()})
	assert.True(t, ok, "nothing stays locked forever")
	holder, _ = l.Holder(ctx, key)
	assert.Equal(t, "next", holder.Record)
}

func TestLeaseAcquireWaitsForACommit(t *testing.T) {
	now := time.Now()
	l := newLeases(t, clock.RealClock{})
	l.Wait = time.Minute
	ctx := context.Background()
	key := Key{Kind: "ServiceInstance", Namespace: "team", Name: "db"}
	_, ok, _ := l.Acquire(ctx, key, &Operation{Record: "first", Started: now})
	require.True(t, ok)

	// The first holder commits once the second change found the lock
	// taken and waits.
	refused := make(chan struct{})
	var once sync.Once
	l.Client = interceptor.NewClient(l.Client.(client.WithWatch), interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			err := c.Create(ctx, obj, opts...)
			if apierrors.IsAlreadyExists(err) {
				once.Do(func() { close(refused) })
			}
			return err
		},
	})
	released := make(chan error, 1)
	go func() {
		<-refused
		released <- l.Release(context.Background(), key, "first")
	}()
	_, ok, err := l.Acquire(ctx, key, &Operation{Record: "second", Started: now})
	require.NoError(t, err)
	require.NoError(t, <-released)
	assert.True(t, ok, "the lock was freed while the second change waited")
}

// Until an operation's record has an answer, its lock is the only trace
// that the broker may have acted: the lock of a Pending record, or of an
// operation whose record is not written yet, never expires into another
// operation's hands.
func TestLeaseOfAPendingRecordDoesNotExpire(t *testing.T) {
	ctx := context.Background()
	key := Key{Kind: "ServiceInstance", Namespace: "team", Name: "db"}
	record := func(phase v1alpha1.OperationPhase) *v1alpha1.BrokerOperation {
		return &v1alpha1.BrokerOperation{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "first"}, Status: v1alpha1.BrokerOperationStatus{Phase: phase}}
	}
	tests := []struct {
		name   string
		holder *v1alpha1.BrokerOperation // nil: no record
		intent bool                      // the lock carries the record to write
		held   bool
	}{
		{"record written, no phase yet", record(""), true, true},
		{"record Pending", record(v1alpha1.PhasePending), true, true},
		{"record InProgress, not renewed", record(v1alpha1.PhaseInProgress), true, false},
		{"record Failed", record(v1alpha1.PhaseFailed), true, false},
		{"record not written yet", nil, true, true},
		{"no record and no intent", nil, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
			l := newLeases(t, clk)
			if tt.holder != nil {
				require.NoError(t, l.Client.Create(ctx, tt.holder))
			}
			first := &Operation{Record: "first", Started: clk.Now()}
			if tt.intent {
				first.Carried = record("")
			}
			_, ok, err := l.Acquire(ctx, key, first)
			require.NoError(t, err)
			require.True(t, ok)

			clk.Step(10 * time.Minute)
			holder, err := l.Holder(ctx, key)
			require.NoError(t, err)
			_, ok, err = l.Acquire(ctx, key, &Operation{Record: "second", Started: clk.Now()})
			require.NoError(t, err)
			assert.Equal(t, !tt.held, ok, "taken over")
			heldBy, err := l.HeldBy(ctx, key)
			require.NoError(t, err)
			if tt.held {
				require.NotNil(t, holder)
				assert.Equal(t, "first", holder.Record)
				assert.Equal(t, "first", heldBy)
			} else {
				assert.Nil(t, holder, "expired")
				assert.Equal(t, "second", heldBy)
			}
		})
	}
}

func TestLeaseAcquireUnlessStopsWaitingWhenTheHolderIsEnough(t *testing.T) {
	now := time.Now()
	l := newLeases(t, clock.RealClock{})
	l.Wait = time.Minute
	ctx := context.Background()
	key := Key{Kind: "ServiceInstance", Namespace: "team", Name: "db"}
	_, ok, _ := l.Acquire(ctx, key, &Operation{Record: "first", Started: now})
	require.True(t, ok)

	asked := 0
	start := time.Now()
	holder, ok, err := l.AcquireUnless(ctx, key, &Operation{Record: "second", Started: now}, func(h *Operation) bool {
		asked++
		return asked == 3 // enough on the third look
	})
	require.NoError(t, err)
	assert.False(t, ok)
	assert.Equal(t, "first", holder.Record)
	assert.Equal(t, 3, asked, "asked on every look while waiting")
	assert.Less(t, time.Since(start), 10*time.Second, "stopped long before the wait ended")
}

// A lock is released with one delete at the version its holder wrote; a
// lock renewed since is read and released all the same; a lock this
// process saw released is not read again.
func TestLeaseReleaseAtTheVersionWritten(t *testing.T) {
	tests := []struct {
		name      string
		renew     bool
		wantReads int
	}{
		{"as written: no read", false, 0},
		{"renewed since: read, then released", true, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
			l := newLeases(t, clk)
			l.Released = NewRecent()
			reads := 0
			l.Client = interceptor.NewClient(l.Client.(client.WithWatch), interceptor.Funcs{
				Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					reads++
					return c.Get(ctx, key, obj, opts...)
				},
			})
			ctx := context.Background()
			key := Key{Kind: "ServiceInstance", Namespace: "team", Name: "db"}
			op := &Operation{Record: "db-update-a", Started: clk.Now()}
			_, ok, err := l.Acquire(ctx, key, op)
			require.NoError(t, err)
			require.True(t, ok)
			require.NotEmpty(t, op.Version, "the version the holder wrote")
			if tt.renew {
				require.NoError(t, l.Renew(ctx, key, op.Record))
			}
			reads = 0

			require.NoError(t, l.ReleaseAt(ctx, key, op.Record, op.Version))
			assert.Equal(t, tt.wantReads, reads)
			reads = 0
			held, err := l.HeldBy(ctx, key)
			require.NoError(t, err)
			assert.Empty(t, held, "released")

			reads = 0
			require.NoError(t, l.Release(ctx, key, op.Record))
			assert.Zero(t, reads, "released already: not read again")
		})
	}
}

// A holder read back from a lock names the kind of the object it
// changes, and its group when that is a typed kind's: a ServiceInstance
// and the objects of typed kinds share the locks of instance ids. A lock
// written without the kind (by a replica of a release that does not
// write it) names the kind of the record it carries, or none.
func TestLeaseHolderNamesItsKind(t *testing.T) {
	typed := &v1alpha1.BrokerOperation{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "db-provision-1"},
		Spec: v1alpha1.BrokerOperationSpec{Target: v1alpha1.OperationTarget{Kind: "Db", APIGroup: "services.lockstep.dev", Name: "db", ExternalID: "ext-1"}}}
	tests := []struct {
		name      string
		key       Key
		carried   *v1alpha1.BrokerOperation
		older     bool
		wantKind  v1alpha1.TargetKind
		wantGroup string
	}{
		{name: "a ServiceInstance", key: Key{Kind: v1alpha1.KindServiceInstance, Namespace: "team", Name: "db", ExternalID: "ext-1"},
			wantKind: v1alpha1.KindServiceInstance},
		{name: "an object of a typed kind", key: Key{Kind: "Db", APIGroup: "services.lockstep.dev", Namespace: "team", Name: "db", ExternalID: "ext-1"},
			wantKind: "Db", wantGroup: "services.lockstep.dev"},
		{name: "an older lock, carrying its record", key: Key{Kind: "Db", APIGroup: "services.lockstep.dev", Namespace: "team", Name: "db", ExternalID: "ext-1"},
			carried: typed, older: true, wantKind: "Db", wantGroup: "services.lockstep.dev"},
		{name: "an older lock, carrying no record", key: Key{Kind: "Db", APIGroup: "services.lockstep.dev", Namespace: "team", Name: "db", ExternalID: "ext-1"},
			older: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
			l := newLeases(t, clk)
			ctx := context.Background()
			_, ok, err := l.Acquire(ctx, tt.key, &Operation{Record: "db-provision-1", Verb: v1alpha1.VerbProvision, User: "bob", Started: clk.Now(), Carried: tt.carried})
			require.NoError(t, err)
			require.True(t, ok)
			if tt.older {
				var lease coordinationv1.Lease
				require.NoError(t, l.Client.Get(ctx, l.objectKey(tt.key), &lease))
				delete(lease.Annotations, annotationKind)
				delete(lease.Annotations, annotationGroup)
				require.NoError(t, l.Client.Update(ctx, &lease))
			}
			holder, err := l.Holder(ctx, tt.key)
			require.NoError(t, err)
			require.NotNil(t, holder)
			assert.Equal(t, tt.wantKind, holder.Kind)
			assert.Equal(t, tt.wantGroup, holder.APIGroup)
			assert.Equal(t, "team", holder.Namespace)
			assert.Equal(t, "db", holder.Name)
		})
	}
}

// KeyOf takes the group of a typed kind from the object (or its model),
// and leaves lockstep.dev's empty.
func TestKeyOfNamesTheGroupOfATypedKind(t *testing.T) {
	si := &v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "db"}, Spec: v1alpha1.ServiceInstanceSpec{ExternalID: "ext-1"}}
	assert.Equal(t, Key{Kind: v1alpha1.KindServiceInstance, Namespace: "team", Name: "db", ExternalID: "ext-1"}, KeyOf(v1alpha1.KindServiceInstance, si))
	si.APIVersion, si.Kind = "lockstep.dev/v1alpha1", "ServiceInstance"
	assert.Empty(t, KeyOf(v1alpha1.KindServiceInstance, si).APIGroup)
	si.APIVersion, si.Kind = "services.lockstep.dev/v1alpha1", "Db"
	assert.Equal(t, Key{Kind: "Db", APIGroup: "services.lockstep.dev", Namespace: "team", Name: "db", ExternalID: "ext-1"}, KeyOf(v1alpha1.InstanceKind(si), si))
	assert.Equal(t, KeyOf(v1alpha1.InstanceKind(si), si).LeaseName(), KeyOf(v1alpha1.KindServiceInstance, si).LeaseName(),
		"a typed object and a ServiceInstance that name one id share its lock")
}
