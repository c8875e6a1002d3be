package brokered

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/journal"
)

func testScheme(t *testing.T) *runtime.Scheme {
	s := runtime.NewScheme()
	require.NoError(t, v1alpha1.AddToScheme(s))
	return s
}

// deleting is an instance being deleted, with lockstep's finalizer.
func deleting(annotations map[string]string) *v1alpha1.ServiceInstance {
	now := metav1.Now()
	return &v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{
		Namespace: "team", Name: "db", UID: "uid-1", Annotations: annotations,
		Finalizers: []string{v1alpha1.Finalizer}, DeletionTimestamp: &now,
	}}
}

func TestFinalize(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		done        bool
		removeErr   error
		releaseErr  error
		wantRemoves int
		wantRelease int
		wantRequeue bool
		wantErr     string
		wantGone    bool
	}{
		{name: "no record: removed at the broker, released, finalizer gone", done: true, wantRemoves: 1, wantRelease: 1, wantGone: true},
		{name: "removal not done yet: asked again later, finalizer stays", wantRemoves: 1, wantRequeue: true},
		{name: "removal fails: the error, finalizer stays", removeErr: errors.New("broker down"), wantRemoves: 1, wantErr: "broker down"},
		{name: "release fails: the error, finalizer stays", done: true, releaseErr: errors.New("secret"), wantRemoves: 1, wantRelease: 1, wantErr: "secret"},
		{name: "detach-on-delete: no broker call, released, finalizer gone",
			annotations: map[string]string{v1alpha1.AnnotationReconcilePolicy: string(v1alpha1.PolicyDetachOnDelete)}, wantRelease: 1, wantGone: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			si := deleting(tt.annotations)
			c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithIndex(&v1alpha1.BrokerOperation{}, journal.TargetUIDIndex, journal.TargetUID).WithObjects(si).Build()
			require.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(si), si))
			var removes, releases int
			res, err := Finalize(context.Background(), JournalReaders{Client: c, Namespace: "lockstep-system"}, si, Removal{
				Kind: v1alpha1.KindServiceInstance, Verb: v1alpha1.VerbDeprovision,
				Remove:  func(context.Context) (bool, error) { removes++; return tt.done, tt.removeErr },
				Release: func(context.Context) error { releases++; return tt.releaseErr },
			})
			if tt.wantErr != "" {
				assert.ErrorContains(t, err, tt.wantErr)
			} else {
				assert.NoError(t, err)
			}
			assert.Equal(t, tt.wantRemoves, removes, "broker removals")
			assert.Equal(t, tt.wantRelease, releases, "releases")
			assert.Equal(t, tt.wantRequeue, res.RequeueAfter > 0, "asked again later")
			err = c.Get(context.Background(), client.ObjectKeyFromObject(si), &v1alpha1.ServiceInstance{})
			assert.Equal(t, tt.wantGone, apierrors.IsNotFound(err), "the object is gone once its last finalizer is")
		})
	}
}

func TestPatchStatus(t *testing.T) {
	ctx := context.Background()
	si := &v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "db"}}
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithIndex(&v1alpha1.BrokerOperation{}, journal.TargetUIDIndex, journal.TargetUID).WithObjects(si).WithStatusSubresource(si).Build()
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(si), si))

	read := si.ResourceVersion
	_, err := PatchStatus(ctx, c, v1alpha1.KindServiceInstance, si, &si.Status, si.Status.DeepCopy())
	require.NoError(t, err)
	assert.Equal(t, read, si.ResourceVersion, "an unchanged status is not written")

	want := si.Status.DeepCopy()
	want.DashboardURL = "https://dash/1"
	_, err = PatchStatus(ctx, c, v1alpha1.KindServiceInstance, si, &si.Status, want)
	require.NoError(t, err)
	var got v1alpha1.ServiceInstance
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(si), &got))
	assert.Equal(t, "https://dash/1", got.Status.DashboardURL)
	assert.Equal(t, got.ResourceVersion, si.ResourceVersion, "obj holds the version its write made")
	assert.Equal(t, "https://dash/1", si.Status.DashboardURL, "obj holds the status written")

	// A field the new status leaves out is removed, not kept.
	want = si.Status.DeepCopy()
	want.DashboardURL = ""
	_, err = PatchStatus(ctx, c, v1alpha1.KindServiceInstance, si, &si.Status, want)
	require.NoError(t, err)
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(si), &got))
	assert.Empty(t, got.Status.DashboardURL)
	want = si.Status.DeepCopy()
	want.DashboardURL = "https://dash/1"
	_, err = PatchStatus(ctx, c, v1alpha1.KindServiceInstance, si, &si.Status, want)
	require.NoError(t, err)

	stale := si.DeepCopy()
	stale.ResourceVersion = read
	want = stale.Status.DeepCopy()
	want.DashboardURL = "https://dash/2"
	_, err = PatchStatus(ctx, c, v1alpha1.KindServiceInstance, stale, &stale.Status, want)
	assert.True(t, apierrors.IsConflict(err), "a status computed from an old version is not written: %v", err)

	require.NoError(t, c.Delete(ctx, &got))
	want = si.Status.DeepCopy()
	want.DashboardURL = "https://dash/3"
	_, err = PatchStatus(ctx, c, v1alpha1.KindServiceInstance, si, &si.Status, want)
	assert.NoError(t, err, "a gone object needs no status")
}

// TestRestoreFinalizer: the reconciler puts lockstep's finalizer back on
// an object the mutating webhook labelled as defaulted (it no longer sees
// that object's updates), and leaves every other object as it is.
func TestRestoreFinalizer(t *testing.T) {
	defaulted := map[string]string{v1alpha1.DefaultedLabel: "true"}
	tests := []struct {
		name       string
		labels     map[string]string
		finalizers []string
		want       []string
	}{
		{name: "defaulted, finalizer taken off: put back", labels: defaulted, want: []string{v1alpha1.Finalizer}},
		{name: "defaulted, another finalizer kept beside it", labels: defaulted, finalizers: []string{"example.com/other"},
			want: []string{"example.com/other", v1alpha1.Finalizer}},
		{name: "defaulted, finalizer on: unchanged", labels: defaulted, finalizers: []string{v1alpha1.Finalizer}, want: []string{v1alpha1.Finalizer}},
		{name: "not labelled: unchanged (the webhook sees its updates)"},
		{name: "label with another value: unchanged", labels: map[string]string{v1alpha1.DefaultedLabel: "no"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			si := &v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{
				Namespace: "team", Name: "db", Labels: tt.labels, Finalizers: tt.finalizers}}
			c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(si).Build()
			obj := &v1alpha1.ServiceInstance{}
			require.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(si), obj))
			require.NoError(t, RestoreFinalizer(context.Background(), c, obj))
			stored := &v1alpha1.ServiceInstance{}
			require.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(si), stored))
			assert.Equal(t, tt.want, stored.Finalizers)
		})
	}
}

// TestStatusPatch: the patch carries the version the status was computed
// from and the difference of the two statuses only, a removed field as
// null; statuses equal in JSON need no write.
func TestStatusPatch(t *testing.T) {
	tests := []struct {
		name     string
		from, to v1alpha1.ServiceInstanceStatus
		want     string
	}{
		{
			name: "a field set",
			from: v1alpha1.ServiceInstanceStatus{},
			to:   v1alpha1.ServiceInstanceStatus{DashboardURL: "https://dash"},
			want: `{"metadata":{"resourceVersion":"7"},"status":{"dashboardURL":"https://dash"}}`,
		},
		{
			name: "a field removed",
			from: v1alpha1.ServiceInstanceStatus{DashboardURL: "https://dash", ObservedGeneration: 2},
			to:   v1alpha1.ServiceInstanceStatus{ObservedGeneration: 3},
			want: `{"metadata":{"resourceVersion":"7"},"status":{"dashboardURL":null,"observedGeneration":3}}`,
		},
		{
			name: "equal in JSON",
			from: v1alpha1.ServiceInstanceStatus{Conditions: nil},
			to:   v1alpha1.ServiceInstanceStatus{Conditions: []metav1.Condition{}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, changed, err := statusPatch("7", &tt.from, &tt.to)
			require.NoError(t, err)
			assert.Equal(t, tt.want != "", changed)
			if tt.want != "" {
				assert.JSONEq(t, tt.want, string(data))
			}
		})
	}
}

// TestFinalizersPatch: the finalizers written are the whole list (a merge
// patch replaces a list), none removes the field, and a version is sent
// only when the write must not cross another.
func TestFinalizersPatch(t *testing.T) {
	tests := []struct {
		name            string
		resourceVersion string
		finalizers      []string
		want            string
	}{
		{"lockstep's removed, another kept", "", []string{"other.example/keep"}, `{"metadata":{"finalizers":["other.example/keep"]}}`},
		{"the last removed", "", without([]string{v1alpha1.Finalizer}, v1alpha1.Finalizer), `{"metadata":{"finalizers":null}}`},
		{"restored at a version", "7", []string{"other.example/keep", v1alpha1.Finalizer}, `{"metadata":{"resourceVersion":"7","finalizers":["other.example/keep","lockstep.dev/broker"]}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, err := finalizersPatch(tt.resourceVersion, tt.finalizers)
			require.NoError(t, err)
			assert.JSONEq(t, tt.want, string(data))
		})
	}
}
