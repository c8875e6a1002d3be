package instance

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
	"github.com/lockstep-dev/lockstep/internal/brokercall"
	"github.com/lockstep-dev/lockstep/internal/controller/controllertest"
	"github.com/lockstep-dev/lockstep/internal/controller/resync"
	"github.com/lockstep-dev/lockstep/internal/journal"
)

const (
	dashboard = "https://dashboard.example/ext-1"
)

type harness struct {
	*controllertest.Harness
}

// newHarness wires the instance controller to a fake API server holding
// objects and a real test broker over HTTP; change edits the catalog
// lockstep sees.
func newHarness(t *testing.T, change func(*osbapi.Catalog), objects ...client.Object) *harness {
	t.Helper()
	h := &harness{Harness: controllertest.NewHarness(t, change, objects...)}
	h.R = New(h.Config)
	return h
}

// resync runs the instance reconciler once it is due: the first pass
// schedules the object, the second, one interval later, fetches it.
func (h *harness) resync(t *testing.T) {
	t.Helper()
	h.Resync(t, types.NamespacedName{Namespace: "team", Name: "db"}, &v1alpha1.ServiceInstance{})
}

func (h *harness) instance(t *testing.T) *v1alpha1.ServiceInstance {
	t.Helper()
	var si v1alpha1.ServiceInstance
	require.NoError(t, h.Client.Get(context.Background(), client.ObjectKey{Namespace: "team", Name: "db"}, &si))
	return &si
}

// confirmed is an instance the broker confirmed: Ready, InSync, with what
// was applied in its status.
func confirmed(plan, planID, params string, annotations map[string]string) *v1alpha1.ServiceInstance {
	var p *runtime.RawExtension
	if params != "" {
		p = &runtime.RawExtension{Raw: json.RawMessage(params)}
	}
	now := metav1.Now()
	return &v1alpha1.ServiceInstance{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "team", UID: "uid-1", Generation: 1, Annotations: annotations},
		Spec:       v1alpha1.ServiceInstanceSpec{BrokerName: "acme", ServiceName: "db", PlanName: plan, ExternalID: "ext-1", Parameters: p},
		Status: v1alpha1.ServiceInstanceStatus{
			Conditions: []metav1.Condition{
				{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Provisioned", LastTransitionTime: now, ObservedGeneration: 1},
				{Type: v1alpha1.ConditionInSync, Status: metav1.ConditionTrue, Reason: "Committed", LastTransitionTime: now, ObservedGeneration: 1},
			},
			LastApplied:  &v1alpha1.AppliedInstance{PlanName: plan, PlanID: planID, Parameters: p.DeepCopy()},
			DashboardURL: dashboard,
		},
	}
}

func TestInstanceResync(t *testing.T) {
	observe := map[string]string{v1alpha1.AnnotationReconcilePolicy: string(v1alpha1.PolicyObserve)}
	held := func(planID string, params map[string]any) func(*fakebroker.Broker) {
		return func(b *fakebroker.Broker) {
			b.PutInstance(fakebroker.Instance{ID: "ext-1", ServiceID: fakebroker.ServiceDBID, PlanID: planID, Parameters: params, DashboardURL: dashboard})
		}
	}
	tests := []struct {
		name        string
		object      *v1alpha1.ServiceInstance
		catalog     func(*osbapi.Catalog)
		broker      func(*fakebroker.Broker)
		wantInSync  metav1.ConditionStatus
		wantReason  string
		wantMsg     []string
		wantReady   metav1.ConditionStatus
		wantWrite   bool // the status was written
		wantFetches int
		wantUpdate  map[string]any // the correction's body, nil for none
	}{
		{
			name:   "the broker's dashboard URL is refreshed",
			object: confirmed("small", fakebroker.PlanSmallID, "", nil),
			broker: func(b *fakebroker.Broker) {
				b.PutInstance(fakebroker.Instance{ID: "ext-1", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID, DashboardURL: "https://new/ext-1"})
			},
			wantInSync: metav1.ConditionTrue, wantReason: "Committed", wantReady: metav1.ConditionTrue, wantWrite: true, wantFetches: 1,
		},
		{
			name:       "plan changed behind lockstep's back, observe: reported only",
			object:     confirmed("small", fakebroker.PlanSmallID, "", observe),
			broker:     held(fakebroker.PlanLargeID, nil),
			wantInSync: metav1.ConditionFalse, wantReason: resync.ReasonPlanDrift, wantReady: metav1.ConditionTrue, wantWrite: true, wantFetches: 1,
			wantMsg: []string{`broker "acme" holds something else than lockstep applied: plan is "large" at the broker, "small" here`,
				"reconcile policy observe: lockstep reports it and changes nothing"},
		},
		{
			name:       "parameters changed behind lockstep's back, manage: the spec is applied again",
			object:     confirmed("small", fakebroker.PlanSmallID, `{"storageGB":10,"region":"eu"}`, nil),
			broker:     held(fakebroker.PlanSmallID, map[string]any{"storageGB": float64(30), "region": "eu"}),
			wantInSync: metav1.ConditionFalse, wantReason: resync.ReasonParametersDrift, wantReady: metav1.ConditionTrue, wantWrite: true, wantFetches: 1,
			wantMsg:    []string{"parameters differ: storageGB (broker: 30, here: 10)", "lockstep re-applies this object's spec at the broker"},
			wantUpdate: map[string]any{"storageGB": float64(10)}, // region is create-only: never sent on update
		},
		{
			name:       "a create-only parameter the broker no longer reports (it replaced the parameters on update): in sync",
			object:     confirmed("small", fakebroker.PlanSmallID, `{"storageGB":10,"region":"eu"}`, nil),
			broker:     held(fakebroker.PlanSmallID, map[string]any{"storageGB": float64(10)}),
			wantInSync: metav1.ConditionTrue, wantReason: "Committed", wantReady: metav1.ConditionTrue, wantFetches: 1,
		},
		{
			name:       "a create-only parameter the broker holds otherwise: reported, never re-applied (no update can change it)",
			object:     confirmed("small", fakebroker.PlanSmallID, `{"storageGB":10,"region":"eu"}`, nil),
			broker:     held(fakebroker.PlanSmallID, map[string]any{"storageGB": float64(10), "region": "us"}),
			wantInSync: metav1.ConditionFalse, wantReason: resync.ReasonParametersDrift, wantReady: metav1.ConditionTrue, wantWrite: true, wantFetches: 1,
			wantMsg: []string{`parameters differ: region (broker: "us", here: "eu")`, "create-only parameters, which no update can change: lockstep reports it and changes nothing"},
		},
		{
			name:   "the correction is refused: the broker's words",
			object: confirmed("small", fakebroker.PlanSmallID, "", nil),
			broker: func(b *fakebroker.Broker) {
				held(fakebroker.PlanLargeID, nil)(b)
				b.Script(fakebroker.OpUpdate, fakebroker.Respond{Status: http.StatusBadRequest, Description: "downgrades are not allowed"})
			},
			wantInSync: metav1.ConditionFalse, wantReason: resync.ReasonPlanDrift, wantReady: metav1.ConditionTrue, wantWrite: true, wantFetches: 1,
			wantMsg: []string{`plan is "large" at the broker, "small" here`, "lockstep could not re-apply this object's spec", "downgrades are not allowed"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.catalog, tt.object)
			if tt.broker != nil {
				tt.broker(h.Broker)
			}
			before := h.instance(t).ResourceVersion
			h.resync(t)
			si := h.instance(t)

			assert.Equal(t, tt.wantFetches, h.Broker.Count(fakebroker.OpGetInstance), "fetches")
			assert.Equal(t, tt.wantWrite, si.ResourceVersion != before, "status written")
			inSync := meta.FindStatusCondition(si.Status.Conditions, v1alpha1.ConditionInSync)
			if tt.wantInSync == "" {
				assert.Nil(t, inSync)
				return
			}
			controllertest.AssertCondition(t, si.Status.Conditions, v1alpha1.ConditionInSync, tt.wantInSync, tt.wantReason, tt.wantMsg...)
			assert.Equal(t, tt.wantReady, meta.FindStatusCondition(si.Status.Conditions, v1alpha1.ConditionReady).Status)

			var ops v1alpha1.BrokerOperationList
			require.NoError(t, h.Client.List(context.Background(), &ops))
			if tt.wantUpdate == nil && !strings.Contains(tt.name, "refused") {
				assert.Zero(t, h.Broker.Count(fakebroker.OpUpdate), "no correction")
				assert.Empty(t, ops.Items, "no operation recorded")
				return
			}
			require.Len(t, ops.Items, 1, "the correction is journaled")
			op := ops.Items[0]
			assert.Equal(t, v1alpha1.VerbUpdate, op.Spec.Verb)
			assert.Equal(t, "system:serviceaccount:lockstep-system:lockstep", op.Spec.Requester.Username, "asked by lockstep itself")
			holder, err := h.Leases.Holder(context.Background(), journal.Key{Kind: "ServiceInstance", Namespace: "team", Name: "db", ExternalID: "ext-1"})
			require.NoError(t, err)
			if tt.wantUpdate == nil {
				assert.Equal(t, v1alpha1.PhaseFailed, op.Status.Phase)
				assert.Nil(t, holder, "a refused correction releases the lock")
				return
			}
			assert.Equal(t, v1alpha1.PhaseSucceeded, op.Status.Phase, "the operations reconciler commits it")
			require.NotNil(t, holder, "the lock stays until the commit")
			call, ok := h.Broker.LastCall(fakebroker.OpUpdate)
			require.True(t, ok)
			assert.Equal(t, tt.wantUpdate, call.JSON["parameters"])
			id := controllertest.Identity(t, call)
			assert.Equal(t, controllertest.Self, id.Username)
			assert.Equal(t, []string{brokercall.ReasonCorrection}, id.Extra[brokercall.ExtraReason], "lockstep says why it calls")
			assert.Equal(t, map[string]any{"platform": "kubernetes", "namespace": "team", "instance_name": "db"}, call.JSON["context"],
				"a correction carries the instance's context, as admission does")
		})
	}
}
