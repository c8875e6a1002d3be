package journal

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// terminatingNamespaces is a fake API server in which the namespaces named
// refuse new objects, as the API server does while a namespace is being
// deleted.
func terminatingNamespaces(t *testing.T, names ...string) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	return fake.NewClientBuilder().WithScheme(scheme).WithIndex(&v1alpha1.BrokerOperation{}, TargetUIDIndex, TargetUID).
		WithInterceptorFuncs(interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			for _, ns := range names {
				if obj.GetNamespace() == ns {
					err := apierrors.NewForbidden(schema.GroupResource{Resource: "objects"}, obj.GetName(),
						errors.New("unable to create new content in namespace "+ns+" because it is being terminated"))
					err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause, Field: "metadata.namespace"}}
					return err
				}
			}
			return c.Create(ctx, obj, opts...)
		}}).Build()
}

func deleteIntent(ns string) Intent {
	si := &v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns, UID: "uid-1"}}
	return Intent{ID: "0b6c5e2a-1111", Target: si, Kind: "ServiceInstance", ExternalID: "ext-1", Broker: "acme", Verb: v1alpha1.VerbDeprovision}
}

func TestBeginInATerminatingNamespaceRecordsInLockstepsNamespace(t *testing.T) {
	c := terminatingNamespaces(t, "team")
	j := &Journal{Client: c, Namespace: "lockstep-system"}
	ctx := context.Background()

	op, err := begin(ctx, j, deleteIntent("team"))
	require.NoError(t, err)
	assert.Equal(t, "lockstep-system", op.Namespace)
	assert.Equal(t, "team", TargetNamespace(op), "the record still names the object's namespace")

	found, err := j.Find(ctx, "team", op.Name)
	require.NoError(t, err)
	require.NotNil(t, found, "found from the object's namespace")
	assert.Equal(t, op.UID, found.UID)

	recorded, err := DeleteRecorded(ctx, c, nil, nil, "lockstep-system", Key{Kind: v1alpha1.KindServiceInstance, Namespace: "team", Name: "db"}, "uid-1", v1alpha1.VerbDeprovision)
	require.NoError(t, err)
	assert.Equal(t, DeleteUnderWay, recorded, "a record without an answer is a delete under way")

	// Elsewhere the record lives next to its object.
	op, err = begin(ctx, j, deleteIntent("other"))
	require.NoError(t, err)
	assert.Equal(t, "other", op.Namespace)
}

// TestRecordOfANamespaceGoneGoesToLockstepsNamespace: the record restored
// from the lock of an operation cut short, once the object's namespace is
// gone, is written in lockstep's namespace (as for a namespace being
// deleted), so that it can be settled; before, its write failed, and with
// it the restoring of every other lock.
func TestRecordOfANamespaceGoneGoesToLockstepsNamespace(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	c := fake.NewClientBuilder().WithScheme(scheme).WithIndex(&v1alpha1.BrokerOperation{}, TargetUIDIndex, TargetUID).
		WithInterceptorFuncs(interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if obj.GetNamespace() == "team" {
				return apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "team")
			}
			return c.Create(ctx, obj, opts...)
		}}).Build()
	j := &Journal{Client: c, Namespace: "lockstep-system"}
	op := j.Draft(deleteIntent("team"))
	require.NoError(t, j.Write(context.Background(), op))
	assert.Equal(t, "lockstep-system", op.Namespace)
	assert.Equal(t, "team", TargetNamespace(op))
}

func TestBeginFailsClearlyWithoutAPlaceToRecord(t *testing.T) {
	c := terminatingNamespaces(t, "team", "lockstep-system")
	j := &Journal{Client: c, Namespace: "lockstep-system"}
	_, err := begin(context.Background(), j, deleteIntent("team"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "writing the operation record lockstep-system/db-deprovision-0b6c5e2a")
}

func TestLocksLiveInLockstepsNamespace(t *testing.T) {
	c := terminatingNamespaces(t, "team")
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC))
	l := &Leases{Client: c, Namespace: "lockstep-system", Duration: time.Minute, Clock: clk}
	j := &Journal{Client: c, Namespace: "lockstep-system"}
	ctx := context.Background()
	key := Key{Kind: "ServiceInstance", Namespace: "team", Name: "db"}

	rec, err := begin(ctx, j, deleteIntent("team"))
	require.NoError(t, err)
	_, ok, err := l.TryAcquire(ctx, key, &Operation{Verb: v1alpha1.VerbDeprovision, User: "alice", Started: clk.Now(), Record: rec.Name})
	require.NoError(t, err)
	require.True(t, ok, "an object in a namespace being deleted can still be locked")

	var lease coordinationv1.Lease
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "lockstep-system", Name: "lockstep-instance-team.db"}, &lease))
	assert.Equal(t, "team", lease.Annotations[AnnotationNamespace])

	// Expired, its holder's record (in lockstep's namespace) still
	// Pending: the lock holds.
	clk.Step(time.Hour)
	holder, err := l.Holder(ctx, key)
	require.NoError(t, err)
	require.NotNil(t, holder, "a Pending record keeps its lock, wherever it lives")
	assert.Equal(t, rec.Name, holder.Record)
}

func TestLeaseNames(t *testing.T) {
	tests := []struct {
		name string
		key  Key
		want string
	}{
		{"an instance by its external id", Key{Kind: "ServiceInstance", Namespace: "team", Name: "db", ExternalID: "3f2a-db"}, "lockstep-instance-3f2a-db"},
		{"a binding by its external id", Key{Kind: "ServiceBinding", Namespace: "team", Name: "creds", ExternalID: "b.1"}, "lockstep-binding-b.1"},
		{"an id that is no object name, made one", Key{Kind: "ServiceInstance", ExternalID: "My_DB"}, "lockstep-instance-my-db-18f6882e1ddc88d5"},
		{"without an id, by namespace and name", Key{Kind: "ServiceInstance", Namespace: "team", Name: "db"}, "lockstep-instance-team.db"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.key.LeaseName()
			assert.Equal(t, tt.want, got)
			assert.Empty(t, validation.IsDNS1123Subdomain(got))
		})
	}
	t.Run("the namespace and name do not count beside an id", func(t *testing.T) {
		a := Key{Kind: "ServiceInstance", Namespace: "team-a", Name: "db", ExternalID: "shared"}
		b := Key{Kind: "ServiceInstance", Namespace: "team-b", Name: "other", ExternalID: "shared"}
		assert.Equal(t, a.LeaseName(), b.LeaseName(), "two objects naming one id contend for one lock")
	})
	t.Run("ids that differ only in case or in characters an object name cannot hold keep distinct locks", func(t *testing.T) {
		names := map[string]bool{}
		for _, id := range []string{"My_DB", "my_db", "my-db", "MY-DB", "my.db", "my..db", "my_-db", strings.Repeat("A", 128)} {
			name := Key{Kind: "ServiceInstance", ExternalID: id}.LeaseName()
			assert.Empty(t, validation.IsDNS1123Subdomain(name), id)
			assert.False(t, names[name], "%s shares the lock %s", id, name)
			names[name] = true
		}
	})
	a := Key{Kind: "ServiceBinding", Namespace: strings.Repeat("n", 63), Name: strings.Repeat("a", 253)}.LeaseName()
	b := Key{Kind: "ServiceBinding", Namespace: strings.Repeat("n", 63), Name: strings.Repeat("a", 252) + "b"}.LeaseName()
	assert.LessOrEqual(t, len(a), 253)
	assert.NotEqual(t, a, b, "long names that differ at the end keep distinct locks")
}

// TestCachedRecordsReadTheIndex: from a cache, an object's records are
// found through TargetUIDIndex, here and in lockstep's namespace, and are
// the ones Records finds by label.
func TestCachedRecordsReadTheIndex(t *testing.T) {
	record := func(name, ns, uid, targetNamespace string) *v1alpha1.BrokerOperation {
		return &v1alpha1.BrokerOperation{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{LabelTargetUID: uid}},
			Spec:       v1alpha1.BrokerOperationSpec{Target: v1alpha1.OperationTarget{Kind: "ServiceInstance", Name: "db", Namespace: targetNamespace, UID: types.UID(uid)}},
		}
	}
	objs := []client.Object{
		record("db-provision", "team", "uid-1", ""),
		record("db-deprovision", "lockstep-system", "uid-1", "team"),
		record("other", "team", "uid-2", ""),
		record("elsewhere", "lockstep-system", "uid-1", "other-team"),
	}
	scheme := runtime.NewScheme()
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	cache := fake.NewClientBuilder().WithScheme(scheme).WithIndex(&v1alpha1.BrokerOperation{}, TargetUIDIndex, TargetUID).WithObjects(objs...).Build()
	names := func(ops []v1alpha1.BrokerOperation) []string {
		var out []string
		for _, op := range ops {
			out = append(out, op.Name)
		}
		return out
	}
	cached, err := CachedRecords(context.Background(), cache, "lockstep-system", "team", "uid-1")
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"db-provision", "db-deprovision"}, names(cached))
	byLabel, err := Records(context.Background(), cache, "lockstep-system", "team", "uid-1")
	require.NoError(t, err)
	assert.ElementsMatch(t, names(byLabel), names(cached))

	noIndex := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	_, err = CachedRecords(context.Background(), noIndex, "lockstep-system", "team", "uid-1")
	assert.Error(t, err, "a reader without the index (the API server) is read with Records")
}

// TestRecordsOfANamespaceBeingDeletedGoHomeAtOnce: once a namespace
// refused a record because it is being deleted, the next records of its
// objects are written in lockstep's namespace with one request, not two;
// after a while the namespace is asked again (it may have been made anew).
func TestRecordsOfANamespaceBeingDeletedGoHomeAtOnce(t *testing.T) {
	api := terminatingNamespaces(t, "team")
	creates := 0
	counted := interceptor.NewClient(api.(client.WithWatch), interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			creates++
			return c.Create(ctx, obj, opts...)
		},
	})
	clk := clocktesting.NewFakePassiveClock(time.Now())
	j := &Journal{Client: counted, Namespace: "lockstep-system", Clock: clk}
	ctx := context.Background()
	write := func(id string) *v1alpha1.BrokerOperation {
		in := deleteIntent("team")
		in.ID = id
		op, err := begin(ctx, j, in)
		require.NoError(t, err)
		return op
	}

	assert.Equal(t, "lockstep-system", write("0b6c5e2a-0001").Namespace)
	assert.Equal(t, 2, creates, "refused next to the object, then written at home")
	assert.Equal(t, "lockstep-system", write("0b6c5e2a-0002").Namespace)
	assert.Equal(t, 3, creates, "written at home at once")

	clk.SetTime(clk.Now().Add(closingMemory + time.Second))
	assert.Equal(t, "lockstep-system", write("0b6c5e2a-0003").Namespace)
	assert.Equal(t, 5, creates, "asked again after a while")
}

// plainName never calls a name valid that the API machinery refuses: it
// is a shortcut for the common lock name, not a second rule.
func TestPlainNameIsNeverLooserThanValidation(t *testing.T) {
	for _, name := range []string{"lockstep-instance-0f764f28-a291-41a2-b60e-c19171f95d27", "a", "a-", "-a", "a.b", "A", "a_b", "", strings.Repeat("a", 253), strings.Repeat("a", 254)} {
		if plainName(name) {
			assert.Empty(t, validation.IsDNS1123Subdomain(name), name)
		}
	}
	assert.True(t, plainName("lockstep-instance-0f764f28-a291-41a2-b60e-c19171f95d27"), "a generated id takes the shortcut")
	rnd := rand.New(rand.NewPCG(1, 2))
	const alphabet = "ab09-._A"
	for range 5000 {
		b := make([]byte, 1+rnd.IntN(260))
		for i := range b {
			b[i] = alphabet[rnd.IntN(len(alphabet))]
		}
		if name := string(b); plainName(name) {
			assert.Empty(t, validation.IsDNS1123Subdomain(name), name)
		}
	}
}
