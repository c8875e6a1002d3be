package binding

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/controller/brokered"
	"github.com/lockstep-dev/lockstep/internal/controller/controllertest"
	"github.com/lockstep-dev/lockstep/internal/controller/resync"
	"github.com/lockstep-dev/lockstep/internal/credentials"
)

// TestBindingReadySaysWhatHappened: Ready tells a bind still running from
// a finished one whose Secret was deleted since, also after a refused
// unbind; status.binding names the Secret only while it holds the
// credentials.
func TestBindingReadySaysWhatHappened(t *testing.T) {
	bound := &v1alpha1.LastOperation{Verb: v1alpha1.VerbBind, State: v1alpha1.StateSucceeded}
	tests := []struct {
		name       string
		last       *v1alpha1.LastOperation
		secret     bool
		gone       bool // resync found the binding gone at its broker
		wantStatus metav1.ConditionStatus
		wantReason string
		wantMsg    string
		// wantSecret is status.binding.name ("" for none).
		wantSecret string
	}{
		{name: "credentials stored", last: bound, secret: true, wantStatus: metav1.ConditionTrue, wantReason: "CredentialsStored", wantMsg: `credentials are in Secret "creds"`,
			wantSecret: "creds"},
		{name: "bind still running", wantStatus: metav1.ConditionFalse, wantReason: "CredentialsPending", wantMsg: "waiting for the broker to finish the bind"},
		{name: "bind finished, Secret deleted since", last: bound, wantStatus: metav1.ConditionFalse, wantReason: "CredentialsMissing",
			wantMsg: `Secret "creds" with its credentials is gone (deleted?); the broker gives credentials only once: delete this binding and create it again`},
		{name: "unbind refused, Secret deleted since", last: &v1alpha1.LastOperation{Verb: v1alpha1.VerbUnbind, State: v1alpha1.StateFailed},
			wantStatus: metav1.ConditionFalse, wantReason: "CredentialsMissing", wantMsg: `Secret "creds" with its credentials is gone`},
		{name: "gone at the broker, Secret still there: not ready", last: bound, secret: true, gone: true,
			wantStatus: metav1.ConditionFalse, wantReason: resync.ReasonGoneAtBroker, wantMsg: `broker "acme" no longer holds binding "creds"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &v1alpha1.ServiceBinding{
				ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "team", UID: "b-uid", Generation: 1},
				Spec:       v1alpha1.ServiceBindingSpec{InstanceName: "db", SecretName: "creds"},
				Status:     v1alpha1.ServiceBindingStatus{LastOperation: tt.last},
			}
			if tt.gone {
				b.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionInSync, Status: metav1.ConditionFalse, Reason: resync.ReasonGoneAtBroker,
					Message: `broker "acme" no longer holds binding "creds"`, LastTransitionTime: metav1.Now()}}
			}
			objects := []client.Object{b}
			if tt.secret {
				objects = append(objects, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "team",
					Labels: map[string]string{credentials.LabelBindingUID: "b-uid"}}})
			}
			c := controllertest.Cluster(t, objects...)
			r := New(brokered.Config{Client: c}, c)
			_, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "team", Name: "creds"}})
			require.NoError(t, err)
			require.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(b), b))
			ready := meta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionReady)
			require.NotNil(t, ready)
			assert.Equal(t, tt.wantStatus, ready.Status)
			assert.Equal(t, tt.wantReason, ready.Reason)
			assert.Contains(t, ready.Message, tt.wantMsg)
			if tt.wantSecret == "" {
				assert.Nil(t, b.Status.Binding, "status.binding is cleared while the Secret is missing")
			} else {
				require.NotNil(t, b.Status.Binding)
				assert.Equal(t, tt.wantSecret, b.Status.Binding.Name)
			}
		})
	}
}
