package binding

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
	"github.com/lockstep-dev/lockstep/internal/broker/osbclient"
	"github.com/lockstep-dev/lockstep/internal/catalog"
	"github.com/lockstep-dev/lockstep/internal/controller/brokered"
	"github.com/lockstep-dev/lockstep/internal/controller/controllertest"
	"github.com/lockstep-dev/lockstep/internal/controller/resync"
	"github.com/lockstep-dev/lockstep/internal/journal"
)

const interval = time.Minute

type harness struct {
	r      *Reconciler
	client client.Client
	broker *fakebroker.Broker
	clock  *clocktesting.FakeClock
}

// newHarness wires the binding controller to a fake API server holding
// objects and a real test broker over HTTP; change edits the catalog
// lockstep sees.
func newHarness(t *testing.T, change func(*osbapi.Catalog), objects ...client.Object) *harness {
	t.Helper()
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	c := fake.NewClientBuilder().WithScheme(scheme).WithIndex(&v1alpha1.BrokerOperation{}, journal.TargetUIDIndex, journal.TargetUID).WithObjects(objects...).
		WithStatusSubresource(&v1alpha1.ServiceInstance{}, &v1alpha1.ServiceBinding{}, &v1alpha1.BrokerOperation{}).Build()
	b := fakebroker.New(t)
	bc, err := osbclient.New(b.Config())
	require.NoError(t, err)
	cat := fakebroker.DefaultCatalog()
	if change != nil {
		change(&cat)
	}
	cache := catalog.NewCache(time.Hour)
	cache.Store(catalog.NewEntry("acme", bc, &cat, nil, time.Now()))
	clk := clocktesting.NewFakeClock(time.Now())
	return &harness{client: c, broker: b, clock: clk, r: New(brokered.Config{Client: c, Namespace: "lockstep-system", Catalogs: cache,
		Leases: &journal.Leases{Client: c, Duration: time.Minute}, Protocol: controllertest.Protocol(c, ""), Limiter: &resync.Limiter{Concurrent: 1},
		ResyncInterval: interval, Timeout: 5 * time.Second, Clock: clk})}
}

// instance is the bound instance, as the broker confirmed it.
func instance() *v1alpha1.ServiceInstance {
	return &v1alpha1.ServiceInstance{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "team", UID: "uid-1"},
		Spec:       v1alpha1.ServiceInstanceSpec{BrokerName: "acme", ServiceName: "db", PlanName: "small", ExternalID: "ext-1"},
	}
}

func boundBinding(params string) *v1alpha1.ServiceBinding {
	var p *runtime.RawExtension
	if params != "" {
		p = &runtime.RawExtension{Raw: json.RawMessage(params)}
	}
	return &v1alpha1.ServiceBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "team", UID: "uid-b"},
		Spec:       v1alpha1.ServiceBindingSpec{InstanceName: "db", ExternalID: "bind-1", SecretName: "creds", Parameters: p},
		Status: v1alpha1.ServiceBindingStatus{
			LastOperation: &v1alpha1.LastOperation{Verb: v1alpha1.VerbBind, State: v1alpha1.StateSucceeded},
			Conditions:    []metav1.Condition{{Type: v1alpha1.ConditionInSync, Status: metav1.ConditionTrue, Reason: "Committed", LastTransitionTime: metav1.Now()}},
		},
	}
}

func TestBindingResync(t *testing.T) {
	secret := map[string]any{"password": "hunter2"}
	tests := []struct {
		name       string
		catalog    func(*osbapi.Catalog)
		broker     func(*fakebroker.Broker)
		wantInSync metav1.ConditionStatus
		wantReason string
		wantMsg    []string
		wantWrite  bool
	}{
		{name: "in sync: nothing is written", wantInSync: metav1.ConditionTrue, wantReason: "Committed",
			broker: func(b *fakebroker.Broker) {
				b.PutBinding(fakebroker.Binding{InstanceID: "ext-1", ID: "bind-1", Parameters: map[string]any{"role": "reader"}, Credentials: secret})
			}},
		{name: "parameters differ: reported, never corrected", wantInSync: metav1.ConditionFalse, wantReason: resync.ReasonParametersDrift, wantWrite: true,
			broker: func(b *fakebroker.Broker) {
				b.PutBinding(fakebroker.Binding{InstanceID: "ext-1", ID: "bind-1", Parameters: map[string]any{"role": "admin"}, Credentials: secret})
			},
			wantMsg: []string{`role (broker: "admin", here: "reader")`, "delete servicebinding creds and create it again"}},
		{name: "gone at the broker", wantInSync: metav1.ConditionFalse, wantReason: resync.ReasonGoneAtBroker, wantWrite: true,
			wantMsg: []string{`broker "acme" no longer holds binding "creds"`}},
		{name: "not retrievable", wantInSync: metav1.ConditionUnknown, wantReason: resync.ReasonNotRetrievable, wantWrite: true,
			catalog: func(c *osbapi.Catalog) { c.Services[0].BindingsRetrievable = false }, wantMsg: []string{"bindings_retrievable is false"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.catalog, instance(), boundBinding(`{"role":"reader"}`))
			h.broker.PutInstance(fakebroker.Instance{ID: "ext-1", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID})
			if tt.broker != nil {
				tt.broker(h.broker)
			}
			key := client.ObjectKey{Namespace: "team", Name: "creds"}
			req := reconcile.Request{NamespacedName: types.NamespacedName(key)}
			_, err := h.r.Reconcile(context.Background(), req) // schedules the first fetch (and writes Ready)
			require.NoError(t, err)
			var before v1alpha1.ServiceBinding
			require.NoError(t, h.client.Get(context.Background(), key, &before))
			h.clock.Step(interval)
			_, err = h.r.Reconcile(context.Background(), req)
			require.NoError(t, err)

			var b v1alpha1.ServiceBinding
			require.NoError(t, h.client.Get(context.Background(), key, &b))
			assert.Equal(t, tt.wantWrite, b.ResourceVersion != before.ResourceVersion, "status written")
			c := meta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionInSync)
			require.NotNil(t, c)
			assert.Equal(t, tt.wantInSync, c.Status)
			assert.Equal(t, tt.wantReason, c.Reason)
			for _, m := range tt.wantMsg {
				assert.Contains(t, c.Message, m)
			}
			assert.Zero(t, h.broker.Count(fakebroker.OpBind, fakebroker.OpUnbind), "a binding is never changed by resync")
			status, err := json.Marshal(b.Status)
			require.NoError(t, err)
			assert.NotContains(t, string(status), "hunter2", "the credentials a fetch returns go nowhere")
		})
	}
}
