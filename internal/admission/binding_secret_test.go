package admission

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/catalog"
)

// The Secret's name is read only for a bind that can be made: a binding
// refused already for its instance (sent with it, before the instance
// exists) reads no Secret, and an update or a delete never does.
func TestBindingSecretIsReadOnlyForABind(t *testing.T) {
	taken := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "creds"}}
	found := &Target{Entry: &catalog.Entry{}, Instance: &v1alpha1.ServiceInstance{}}
	tests := []struct {
		name      string
		op        admissionv1.Operation
		target    *Target
		wantReads int
		wantTaken bool
	}{
		{"a create whose instance was found", admissionv1.Create, found, 1, true},
		{"a create refused for its instance", admissionv1.Create, &Target{}, 0, false},
		{"an update", admissionv1.Update, found, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reads := 0
			reader := fake.NewClientBuilder().WithObjects(taken).WithInterceptorFuncs(interceptor.Funcs{
				Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					reads++
					return c.Get(ctx, key, obj, opts...)
				},
			}).Build()
			b := &v1alpha1.ServiceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "app", UID: "uid-b"},
				Spec: v1alpha1.ServiceBindingSpec{InstanceName: "db", SecretName: "creds"}}
			errs, _, err := (&bindingSecret{reader: reader}).Check(context.Background(), &Attributes[Binding]{Operation: tt.op, New: b, Old: b}, tt.target)
			assert.Empty(t, errs)
			assert.Equal(t, tt.wantReads, reads, "Secrets read")
			if !tt.wantTaken {
				require.NoError(t, err)
				return
			}
			var status interface{ Status() metav1.Status }
			require.True(t, errors.As(err, &status), "%v", err)
			assert.EqualValues(t, 409, status.Status().Code)
			assert.Contains(t, err.Error(), `cannot bind "app"`)
		})
	}
}
