package instance

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/broker/osbclient"
	"github.com/lockstep-dev/lockstep/internal/brokercall"
	"github.com/lockstep-dev/lockstep/internal/catalog"
	"github.com/lockstep-dev/lockstep/internal/controller/brokered"
	"github.com/lockstep-dev/lockstep/internal/controller/controllertest"
)

func TestInstanceFinalizer(t *testing.T) {
	tests := []struct {
		name          string
		policy        v1alpha1.ReconcilePolicy
		record        *controllertest.Record
		script        *fakebroker.Respond
		wantGone      bool
		wantDeprov    int
		wantErr       string
		wantRequeue   bool
		brokerHoldsIt bool
		// wantRecord is the phase of the finalizer's own record, when it
		// deprovisions (Succeeded unless said).
		wantRecord v1alpha1.OperationPhase
	}{
		{name: "confirmed in the journal: no broker call", record: &controllertest.Record{Namespace: "team", Phase: v1alpha1.PhaseSucceeded},
			wantGone: true, brokerHoldsIt: true},
		{name: "committed in the journal: no broker call", record: &controllertest.Record{Namespace: "team", Phase: v1alpha1.PhaseCommitted},
			wantGone: true, brokerHoldsIt: true},
		{name: "confirmed in lockstep's namespace (the object's namespace is being deleted): no broker call",
			record: &controllertest.Record{Namespace: "lockstep-system", Phase: v1alpha1.PhaseSucceeded}, wantGone: true, brokerHoldsIt: true},
		{name: "confirmed, not in the cache yet: read past it, no broker call",
			record: &controllertest.Record{Namespace: "team", Phase: v1alpha1.PhaseSucceeded, Uncached: true}, wantGone: true, brokerHoldsIt: true},
		{name: "answer still being written (Pending): waits, no broker call",
			record: &controllertest.Record{Namespace: "team", Phase: ""}, wantRequeue: true, brokerHoldsIt: true},
		{name: "deprovision still followed (InProgress): waits, no broker call",
			record: &controllertest.Record{Namespace: "team", Phase: v1alpha1.PhaseInProgress}, wantRequeue: true, brokerHoldsIt: true},
		{name: "an earlier deprovision failed, this delete bypassed admission: deprovisions",
			record: &controllertest.Record{Namespace: "team", Phase: v1alpha1.PhaseFailed}, wantGone: true, wantDeprov: 1},
		{name: "bypassed admission: deprovisions first", wantGone: true, wantDeprov: 1},
		{name: "detach-on-delete, bypassed admission: the broker keeps the instance", policy: v1alpha1.PolicyDetachOnDelete,
			wantGone: true, brokerHoldsIt: true},
		{name: "observe: the broker keeps the instance", policy: v1alpha1.PolicyObserve, wantGone: true, brokerHoldsIt: true},
		{name: "manage, named: deprovisions", policy: v1alpha1.PolicyManage, wantGone: true, wantDeprov: 1},
		{name: "bypassed admission, async deprovision", script: &fakebroker.Respond{Async: &fakebroker.Async{InProgressPolls: 1}}, wantGone: true, wantDeprov: 1},
		{name: "bypassed admission, broker refuses: finalizer stays", script: &fakebroker.Respond{Status: http.StatusBadRequest, Description: "protected"},
			wantDeprov: 1, wantErr: "protected", brokerHoldsIt: true},
		{name: "bypassed admission, broker answers 500: outcome unknown, followed; finalizer stays",
			script:     &fakebroker.Respond{Status: http.StatusInternalServerError, Description: "down"},
			wantDeprov: 1, wantRequeue: true, brokerHoldsIt: true, wantRecord: v1alpha1.PhaseInProgress},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := fakebroker.New(t)
			b.PutInstance(fakebroker.Instance{ID: "ext-1", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID})
			if tt.script != nil {
				b.Script(fakebroker.OpDeprovision, *tt.script)
			}
			bc, err := osbclient.New(b.Config())
			require.NoError(t, err)
			cat := fakebroker.DefaultCatalog()
			cache := catalog.NewCache(time.Hour)
			cache.Store(catalog.NewEntry("acme", bc, &cat, nil, time.Now()))

			scheme := runtime.NewScheme()
			require.NoError(t, v1alpha1.AddToScheme(scheme))
			require.NoError(t, coordinationv1.AddToScheme(scheme))
			now := metav1.Now()
			si := &v1alpha1.ServiceInstance{
				ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "team", UID: "uid-1", DeletionTimestamp: &now, Finalizers: []string{v1alpha1.Finalizer}},
				Spec:       v1alpha1.ServiceInstanceSpec{BrokerName: "acme", ServiceName: "db", PlanName: "small", ExternalID: "ext-1"},
			}
			if tt.policy != "" {
				si.Annotations = map[string]string{v1alpha1.AnnotationReconcilePolicy: string(tt.policy)}
			}
			c, apiReader := controllertest.Clients(scheme, []client.Object{si}, tt.record, "db-deprovision-1", v1alpha1.VerbDeprovision,
				v1alpha1.OperationTarget{Kind: "ServiceInstance", Name: "db", Namespace: "team", UID: "uid-1"})
			r := New(brokered.Config{Client: c, APIReader: apiReader, Namespace: "lockstep-system", Catalogs: cache, Timeout: 5 * time.Second,
				Protocol: controllertest.Protocol(c, "lockstep-system")})

			res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "team", Name: "db"}})
			if tt.wantErr != "" {
				assert.ErrorContains(t, err, tt.wantErr)
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, tt.wantRequeue, res.RequeueAfter > 0, "looks again later")
			err = c.Get(context.Background(), client.ObjectKeyFromObject(si), &v1alpha1.ServiceInstance{})
			assert.Equal(t, tt.wantGone, apierrors.IsNotFound(err), "object gone once the finalizer is removed")
			assert.Equal(t, tt.wantDeprov, b.Count(fakebroker.OpDeprovision))
			_, held := b.Instance("ext-1")
			assert.Equal(t, tt.brokerHoldsIt, held)
			if tt.wantDeprov == 0 {
				return
			}
			// The finalizer's deprovision is journaled, as lockstep's own
			// call, and says so to the broker.
			call, ok := b.LastCall(fakebroker.OpDeprovision)
			require.True(t, ok)
			id := controllertest.Identity(t, call)
			assert.Equal(t, controllertest.Self, id.Username)
			assert.Equal(t, []string{brokercall.ReasonFinalizer}, id.Extra[brokercall.ExtraReason])
			var ops v1alpha1.BrokerOperationList
			require.NoError(t, c.List(context.Background(), &ops))
			want := tt.wantRecord
			if want == "" {
				want = v1alpha1.PhaseSucceeded
			}
			var phases []v1alpha1.OperationPhase
			for _, op := range ops.Items {
				if op.Spec.Requester.Username == controllertest.Self {
					phases = append(phases, op.Status.Phase)
				}
			}
			if tt.wantErr != "" {
				want = v1alpha1.PhaseFailed
			}
			assert.Equal(t, []v1alpha1.OperationPhase{want}, phases, "one record of the finalizer's deprovision")
		})
	}
}
