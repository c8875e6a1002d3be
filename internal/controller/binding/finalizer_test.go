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
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/broker/osbclient"
	"github.com/lockstep-dev/lockstep/internal/brokercall"
	"github.com/lockstep-dev/lockstep/internal/catalog"
	"github.com/lockstep-dev/lockstep/internal/controller/brokered"
	"github.com/lockstep-dev/lockstep/internal/controller/controllertest"
	"github.com/lockstep-dev/lockstep/internal/credentials"
)

func TestBindingFinalizer(t *testing.T) {
	tests := []struct {
		name   string
		policy v1alpha1.ReconcilePolicy
		record *controllertest.Record
		script *fakebroker.Respond
		// secret: the binding's Secret, "owned" (lockstep wrote it for the
		// binding), "foreign" (someone else's), or none.
		secret         string
		noInstance     bool
		noFinalizer    bool
		wantReleased   bool // lockstep's finalizer is off the binding afterwards
		wantUnbind     int
		wantErr        string
		wantRequeue    bool
		wantSecretKept bool
		brokerHoldsIt  bool
	}{
		{name: "confirmed in the journal: no broker call, the Secret goes",
			record: &controllertest.Record{Namespace: "team", Phase: v1alpha1.PhaseSucceeded}, secret: "owned", wantReleased: true, brokerHoldsIt: true},
		{name: "committed in the journal: no broker call",
			record: &controllertest.Record{Namespace: "team", Phase: v1alpha1.PhaseCommitted}, wantReleased: true, brokerHoldsIt: true},
		{name: "confirmed in lockstep's namespace (the binding's namespace is being deleted)",
			record: &controllertest.Record{Namespace: "lockstep-system", Phase: v1alpha1.PhaseSucceeded}, wantReleased: true, brokerHoldsIt: true},
		{name: "confirmed, not in the cache yet: read past it, no broker call",
			record: &controllertest.Record{Namespace: "team", Phase: v1alpha1.PhaseSucceeded, Uncached: true}, wantReleased: true, brokerHoldsIt: true},
		{name: "answer still being written (Pending): waits, keeps the Secret",
			record: &controllertest.Record{Namespace: "team", Phase: ""}, secret: "owned", wantRequeue: true, wantSecretKept: true, brokerHoldsIt: true},
		{name: "unbind still followed (InProgress): waits",
			record: &controllertest.Record{Namespace: "team", Phase: v1alpha1.PhaseInProgress}, wantRequeue: true, brokerHoldsIt: true},
		{name: "an earlier unbind failed, this delete bypassed admission: unbinds",
			record: &controllertest.Record{Namespace: "team", Phase: v1alpha1.PhaseFailed}, wantReleased: true, wantUnbind: 1},
		{name: "bypassed admission: unbinds first, then the Secret goes", secret: "owned", wantReleased: true, wantUnbind: 1},
		{name: "a Secret lockstep did not write is never deleted", secret: "foreign", wantReleased: true, wantUnbind: 1, wantSecretKept: true},
		{name: "bypassed admission, async unbind", script: &fakebroker.Respond{Async: &fakebroker.Async{InProgressPolls: 1}},
			wantReleased: true, wantUnbind: 1},
		{name: "detach-on-delete: the broker keeps the binding", policy: v1alpha1.PolicyDetachOnDelete, secret: "owned",
			wantReleased: true, brokerHoldsIt: true},
		{name: "observe: the broker keeps the binding", policy: v1alpha1.PolicyObserve, wantReleased: true, brokerHoldsIt: true},
		{name: "bypassed admission, broker refuses: finalizer and Secret stay",
			script: &fakebroker.Respond{Status: http.StatusBadRequest, Description: "protected"}, secret: "owned",
			wantUnbind: 1, wantErr: "protected", wantSecretKept: true, brokerHoldsIt: true},
		{name: "bypassed admission, broker answers 500: outcome unknown, followed; finalizer and Secret stay",
			script: &fakebroker.Respond{Status: http.StatusInternalServerError, Description: "down"}, secret: "owned",
			wantUnbind: 1, wantRequeue: true, wantSecretKept: true, brokerHoldsIt: true},
		{name: "bypassed admission, its instance is gone: says so, finalizer stays", noInstance: true,
			wantErr: "reading its instance", brokerHoldsIt: true},
		{name: "no finalizer: nothing to do", noFinalizer: true, secret: "owned", wantReleased: true, wantSecretKept: true, brokerHoldsIt: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := fakebroker.New(t)
			b.PutInstance(fakebroker.Instance{ID: "ext-i", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID})
			b.PutBinding(fakebroker.Binding{InstanceID: "ext-i", ID: "ext-b", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID})
			if tt.script != nil {
				b.Script(fakebroker.OpUnbind, *tt.script)
			}
			bc, err := osbclient.New(b.Config())
			require.NoError(t, err)
			cat := fakebroker.DefaultCatalog()
			cache := catalog.NewCache(time.Hour)
			cache.Store(catalog.NewEntry("acme", bc, &cat, nil, time.Now()))

			scheme := runtime.NewScheme()
			require.NoError(t, clientgoscheme.AddToScheme(scheme))
			require.NoError(t, v1alpha1.AddToScheme(scheme))
			now := metav1.Now()
			sb := &v1alpha1.ServiceBinding{
				ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "team", UID: "uid-b", DeletionTimestamp: &now, Finalizers: []string{v1alpha1.Finalizer, "keep"}},
				Spec:       v1alpha1.ServiceBindingSpec{InstanceName: "db", SecretName: "creds", ExternalID: "ext-b"},
			}
			if tt.noFinalizer {
				sb.Finalizers = []string{"keep"}
			}
			if tt.policy != "" {
				sb.Annotations = map[string]string{v1alpha1.AnnotationReconcilePolicy: string(tt.policy)}
			}
			objs := []client.Object{sb}
			if !tt.noInstance {
				objs = append(objs, &v1alpha1.ServiceInstance{
					ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "team", UID: "uid-i"},
					Spec:       v1alpha1.ServiceInstanceSpec{BrokerName: "acme", ServiceName: "db", PlanName: "small", ExternalID: "ext-i"},
				})
			}
			switch tt.secret {
			case "owned":
				objs = append(objs, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "team",
					Labels: map[string]string{credentials.LabelBindingUID: "uid-b"}}})
			case "foreign":
				objs = append(objs, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "team"}})
			}
			c, apiReader := controllertest.Clients(scheme, objs, tt.record, "creds-unbind-1", v1alpha1.VerbUnbind,
				v1alpha1.OperationTarget{Kind: "ServiceBinding", Name: "creds", Namespace: "team", UID: "uid-b"})
			r := New(brokered.Config{Client: c, APIReader: apiReader, Namespace: "lockstep-system", Catalogs: cache, Timeout: 5 * time.Second,
				Protocol: controllertest.Protocol(c, "lockstep-system")})

			ctx := context.Background()
			res, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "team", Name: "creds"}})
			if tt.wantErr != "" {
				assert.ErrorContains(t, err, tt.wantErr)
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, tt.wantRequeue, res.RequeueAfter > 0, "looks again later")
			var got v1alpha1.ServiceBinding
			require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(sb), &got), "another finalizer keeps the object")
			assert.Equal(t, tt.wantReleased, !controllerutil.ContainsFinalizer(&got, v1alpha1.Finalizer), "lockstep's finalizer removed")
			if tt.secret != "" {
				err = c.Get(ctx, client.ObjectKey{Namespace: "team", Name: "creds"}, &corev1.Secret{})
				assert.Equal(t, tt.wantSecretKept, err == nil, "Secret kept (%v)", err)
				assert.Equal(t, !tt.wantSecretKept, apierrors.IsNotFound(err), "Secret deleted (%v)", err)
			}
			assert.Equal(t, tt.wantUnbind, b.Count(fakebroker.OpUnbind))
			_, held := b.Binding("ext-i", "ext-b")
			assert.Equal(t, tt.brokerHoldsIt, held, "the broker holds the binding")
			if call, ok := b.LastCall(fakebroker.OpUnbind); ok {
				id := controllertest.Identity(t, call)
				assert.Equal(t, controllertest.Self, id.Username, "the finalizer's unbind is lockstep's own call")
				assert.Equal(t, []string{brokercall.ReasonFinalizer}, id.Extra[brokercall.ExtraReason])
			}
		})
	}
}
