package credentials

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

func binding(name, uid string) *v1alpha1.ServiceBinding {
	return &v1alpha1.ServiceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name, UID: types.UID("uid-" + uid)},
		Spec:       v1alpha1.ServiceBindingSpec{SecretName: name},
	}
}

func newClient(t *testing.T, objects ...client.Object) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	require.NoError(t, corev1.AddToScheme(scheme))
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(objects...).Build()
}

func TestWrite(t *testing.T) {
	long := strings.Repeat("a", 70) + ".orders"
	tests := []struct {
		name     string
		binding  *v1alpha1.ServiceBinding
		existing *corev1.Secret
		wantErr  string
		// wantGets are the reads before the write: none for a new Secret,
		// which is created at once.
		wantGets int
	}{
		{name: "a new Secret", binding: binding("db", "1")},
		{name: "a binding name longer than a label value", binding: binding(long, "1")},
		{name: "a Secret lockstep wrote for the same binding is rewritten", binding: binding("db", "1"), wantGets: 1,
			existing: &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "db",
				Labels: map[string]string{LabelBindingUID: "uid-1"}}, Data: map[string][]byte{"old": []byte("x")}}},
		{name: "a Secret lockstep did not write is never overwritten", binding: binding("db", "1"),
			existing: &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "db"}, Data: map[string][]byte{"theirs": []byte("x")}},
			wantGets: 1, wantErr: `Secret "db" already exists in namespace "team" and lockstep did not write it for this binding`},
		{name: "a Secret written for another binding is never overwritten", binding: binding("db", "1"),
			existing: &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "db",
				Labels: map[string]string{LabelBindingUID: "uid-2"}}},
			wantGets: 1, wantErr: "lockstep never overwrites it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var objects []client.Object
			if tt.existing != nil {
				objects = append(objects, tt.existing)
			}
			c := newClient(t, objects...)
			gets := 0
			counted := interceptor.NewClient(c.(client.WithWatch), interceptor.Funcs{
				Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					gets++
					return c.Get(ctx, key, obj, opts...)
				},
			})
			err := Write(context.Background(), counted, tt.binding, Offering{}, map[string]any{"password": "s3cret", "port": 5432})
			assert.Equal(t, tt.wantGets, gets, "reads before the write")

			var got corev1.Secret
			require.NoError(t, c.Get(context.Background(), client.ObjectKey{Namespace: "team", Name: tt.binding.Spec.SecretName}, &got))
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				assert.NotContains(t, err.Error(), "s3cret")
				assert.Equal(t, tt.existing.Data, got.Data, "the Secret stays as it was")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, map[string][]byte{"password": []byte("s3cret"), "port": []byte("5432")}, got.Data)
			assert.Equal(t, string(tt.binding.UID), got.Labels[LabelBindingUID])
			for k, v := range got.Labels {
				assert.Empty(t, validation.IsValidLabelValue(v), "label %s holds a valid value", k)
			}
			assert.Equal(t, tt.binding.Name, BindingName(&got), "the Secret leads back to its binding")
		})
	}
}

func TestBindingName(t *testing.T) {
	yes := true
	owned := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", OwnerReferences: []metav1.OwnerReference{
		{APIVersion: v1alpha1.GroupVersion.String(), Kind: "ServiceBinding", Name: "from-owner", UID: "u", Controller: &yes}},
		Annotations: map[string]string{AnnotationBinding: "from-annotation"}}}
	assert.Equal(t, "from-owner", BindingName(owned), "the controller reference decides once the binding adopted it")
	annotated := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Annotations: map[string]string{AnnotationBinding: "from-annotation"}}}
	assert.Equal(t, "from-annotation", BindingName(annotated), "before the binding exists")
	assert.Empty(t, BindingName(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}}), "not lockstep's")
}

func TestAdoptGivesTheSecretItsController(t *testing.T) {
	b := binding(strings.Repeat("b", 80), "1")
	c := newClient(t)
	require.NoError(t, Write(context.Background(), c, b, Offering{}, map[string]any{"k": "v"}))
	require.NoError(t, Adopt(context.Background(), c, b, find(t, c, b)))
	var got corev1.Secret
	require.NoError(t, c.Get(context.Background(), client.ObjectKey{Namespace: "team", Name: b.Spec.SecretName}, &got))
	ref := metav1.GetControllerOf(&got)
	require.NotNil(t, ref)
	assert.Equal(t, b.UID, ref.UID)
	assert.Equal(t, "ServiceBinding", ref.Kind)
	assert.Equal(t, v1alpha1.GroupVersion.String(), ref.APIVersion)
	assert.True(t, ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion, "the binding is deleted only after its Secret")
	assert.Equal(t, b.Name, BindingName(&got))
	require.NoError(t, Adopt(context.Background(), c, b, find(t, c, b)), "adopting twice changes nothing")
	require.NoError(t, c.Get(context.Background(), client.ObjectKey{Namespace: "team", Name: b.Spec.SecretName}, &got))
	assert.Len(t, got.OwnerReferences, 1)
}

// TestAdoptKeepsTheOtherOwners: the cache keeps only a Secret's controller
// reference, so Adopt reads the Secret's owners afresh before it adds its
// own.
func TestAdoptKeepsTheOtherOwners(t *testing.T) {
	b := binding("creds", "1")
	other := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "keeper", UID: "cm"}
	stored := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "creds",
		Labels: map[string]string{LabelBindingUID: string(b.UID)}, OwnerReferences: []metav1.OwnerReference{other}}}
	c := newClient(t, stored)
	cached := find(t, c, b)
	trimmed, err := TrimSecret(cached)
	require.NoError(t, err)
	require.Empty(t, trimmed.(*metav1.PartialObjectMetadata).OwnerReferences, "the cache drops owners that are not the controller")
	require.NoError(t, Adopt(context.Background(), c, b, trimmed.(*metav1.PartialObjectMetadata)))
	var got corev1.Secret
	require.NoError(t, c.Get(context.Background(), client.ObjectKey{Namespace: "team", Name: "creds"}, &got))
	require.Len(t, got.OwnerReferences, 2)
	assert.Equal(t, other, got.OwnerReferences[0])
	assert.Equal(t, b.UID, metav1.GetControllerOf(&got).UID)
}

// find reads the binding's Secret with Find.
func find(t *testing.T, r client.Reader, b *v1alpha1.ServiceBinding) *metav1.PartialObjectMetadata {
	t.Helper()
	s, err := Find(context.Background(), r, b)
	require.NoError(t, err)
	return s
}
