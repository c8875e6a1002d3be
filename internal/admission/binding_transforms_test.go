package admission

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
)

// lockstep copies a Secret's keys into a binding's Secret only if the
// requester may read it: a user who may create bindings but not read a
// Secret cannot have its values copied where they can read them.
func TestSecretTransformsNeedTheRightToReadTheSecret(t *testing.T) {
	tls := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db-tls", Namespace: "team"}, Data: map[string][]byte{"ca.crt": []byte("s3cr3t-pem")}}
	admin := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db-admin", Namespace: "team"}, Data: map[string][]byte{"password": []byte("s3cr3t-pw")}}
	tests := []struct {
		name     string
		from     []string
		wantCode int32
		wantMsg  string
	}{
		{name: "may read every Secret", from: []string{"db-tls"}},
		{name: "may not read one", from: []string{"db-tls", "db-admin"}, wantCode: 422,
			wantMsg: `spec.secretTransforms[1].addKeysFrom.secretRef.name: Forbidden: user "alice" may not get Secret "db-admin" in namespace "team", and lockstep copies a Secret's keys only for users who may read it themselves`},
		{name: "may read it, but it does not exist", from: []string{"db-cert"}, wantCode: 422,
			wantMsg: `spec.secretTransforms[0].addKeysFrom.secretRef.name: Not found: "db-cert"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, instance("small", ""), tls, admin)
			d := h.deps
			d.Access = readers{"alice": {"db-tls", "db-cert"}}
			h.bindings = NewBindingValidator(d, nil)
			h.broker.PutInstance(fakebroker.Instance{ID: "ext-1", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID})
			b := binding("", func(b *v1alpha1.ServiceBinding) {
				for _, name := range tt.from {
					b.Spec.SecretTransforms = append(b.Spec.SecretTransforms, v1alpha1.SecretTransform{
						AddKeysFrom: &v1alpha1.AddKeysFromTransform{SecretRef: v1alpha1.LocalSecretReference{Name: name}}})
				}
			})
			_, err := h.admitBinding(admissionv1.Create, nil, b, false)
			if tt.wantCode == 0 {
				require.NoError(t, err)
				assert.Equal(t, 1, h.broker.Count(fakebroker.OpBind))
				return
			}
			require.Error(t, err)
			var status apierrors.APIStatus
			require.ErrorAs(t, err, &status)
			assert.Equal(t, tt.wantCode, status.Status().Code)
			assert.Contains(t, err.Error(), tt.wantMsg)
			assert.NotContains(t, err.Error(), "s3cr3t")
			assert.Empty(t, h.broker.Calls(), "the broker is not called")
		})
	}
}
