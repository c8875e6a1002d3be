package binding

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/controller/brokered"
	"github.com/lockstep-dev/lockstep/internal/controller/controllertest"
	"github.com/lockstep-dev/lockstep/internal/credentials"
)

// TestBindingFinalizerReleasesTheSecret: what the finalizer of a binding
// does besides what it does for every kind (internal/controller/brokered):
// the binding's Secret goes once the broker no longer holds the binding,
// and never a Secret lockstep did not write.
func TestBindingFinalizerReleasesTheSecret(t *testing.T) {
	tests := []struct {
		name   string
		record *controllertest.Record
		script *fakebroker.Respond
		// secret: the binding's Secret, "owned" (lockstep wrote it for the
		// binding) or "foreign" (someone else's).
		secret         string
		noInstance     bool
		wantErr        string
		wantSecretKept bool
	}{
		{name: "confirmed in the journal: the Secret goes",
			record: &controllertest.Record{Namespace: "team", Phase: v1alpha1.PhaseSucceeded}, secret: "owned"},
		{name: "answer still being written (Pending): the Secret stays",
			record: &controllertest.Record{Namespace: "team", Phase: ""}, secret: "owned", wantSecretKept: true},
		{name: "bypassed admission: unbound first, then the Secret goes", secret: "owned"},
		{name: "a Secret lockstep did not write is never deleted", secret: "foreign", wantSecretKept: true},
		{name: "bypassed admission, broker refuses: the Secret stays",
			script: &fakebroker.Respond{Status: http.StatusBadRequest, Description: "protected"}, secret: "owned",
			wantErr: "protected", wantSecretKept: true},
		{name: "bypassed admission, its instance is gone: says so, the Secret stays", noInstance: true, secret: "owned",
			wantErr: "reading its instance", wantSecretKept: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, cache := controllertest.Broker(t, nil)
			b.PutInstance(fakebroker.Instance{ID: "ext-i", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID})
			b.PutBinding(fakebroker.Binding{InstanceID: "ext-i", ID: "ext-b", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID})
			if tt.script != nil {
				b.Script(fakebroker.OpUnbind, *tt.script)
			}
			now := metav1.Now()
			objs := []client.Object{&v1alpha1.ServiceBinding{
				ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "team", UID: "uid-b", DeletionTimestamp: &now, Finalizers: []string{v1alpha1.Finalizer, "keep"}},
				Spec:       v1alpha1.ServiceBindingSpec{InstanceName: "db", SecretName: "creds", ExternalID: "ext-b"},
			}}
			if !tt.noInstance {
				objs = append(objs, &v1alpha1.ServiceInstance{
					ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "team", UID: "uid-i"},
					Spec:       v1alpha1.ServiceInstanceSpec{BrokerName: "acme", ServiceName: "db", PlanName: "small", ExternalID: "ext-i"},
				})
			}
			secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "team"}}
			if tt.secret == "owned" {
				secret.Labels = map[string]string{credentials.LabelBindingUID: "uid-b"}
			}
			objs = append(objs, secret)
			c, apiReader := controllertest.Clients(controllertest.Scheme(t), objs, tt.record, "creds-unbind-1", v1alpha1.VerbUnbind,
				v1alpha1.OperationTarget{Kind: "ServiceBinding", Name: "creds", Namespace: "team", UID: "uid-b"})
			r := New(brokered.Config{Client: c, APIReader: apiReader, Namespace: "lockstep-system", Catalogs: cache, Timeout: 5 * time.Second,
				Protocol: controllertest.Protocol(c, "lockstep-system")}, c)

			ctx := context.Background()
			_, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "team", Name: "creds"}})
			if tt.wantErr != "" {
				assert.ErrorContains(t, err, tt.wantErr)
			} else {
				require.NoError(t, err)
			}
			err = c.Get(ctx, client.ObjectKey{Namespace: "team", Name: "creds"}, &corev1.Secret{})
			assert.Equal(t, tt.wantSecretKept, err == nil, "Secret kept (%v)", err)
			assert.Equal(t, !tt.wantSecretKept, apierrors.IsNotFound(err), "Secret deleted (%v)", err)
		})
	}
}
