package admission

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
)

// resourceQuota is a quota of namespace team as the resource quota
// controller and the API server's charges left it: hard and used of each
// resource ("count/...": n); used -1 leaves the resource out of
// status.used; with no hard at all, the quota has no status yet.
func resourceQuota(name string, hard map[string]int64, used map[string]int64, mutate ...func(*corev1.ResourceQuota)) *corev1.ResourceQuota {
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name}, Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{}}}
	for r, n := range hard {
		q.Spec.Hard[corev1.ResourceName(r)] = *resource.NewQuantity(n, resource.DecimalSI)
		if q.Status.Hard == nil {
			q.Status.Hard, q.Status.Used = corev1.ResourceList{}, corev1.ResourceList{}
		}
		q.Status.Hard[corev1.ResourceName(r)] = *resource.NewQuantity(n, resource.DecimalSI)
	}
	for r, n := range used {
		if n >= 0 {
			q.Status.Used[corev1.ResourceName(r)] = *resource.NewQuantity(n, resource.DecimalSI)
		}
	}
	for _, m := range mutate {
		m(q)
	}
	return q
}

const (
	countInstances = "count/serviceinstances.lockstep.dev"
	countBindings  = "count/servicebindings.lockstep.dev"
)

// A create that the namespace's ResourceQuotas would refuse after lockstep
// is refused before the broker is called, as the API server would refuse
// it (403 and its words, then what they mean); what the API server would
// let through reaches the broker.
func TestResourceQuotas(t *testing.T) {
	oneLeft := resourceQuota("q", map[string]int64{countInstances: 2}, map[string]int64{countInstances: 1})
	full := resourceQuota("q", map[string]int64{countInstances: 1}, map[string]int64{countInstances: 1})
	tests := []struct {
		name      string
		quotas    []runtime.Object
		bind      bool
		op        admissionv1.Operation
		dryRun    bool
		wantMsg   string // "" when allowed
		wantCalls map[fakebroker.Op]int
	}{
		{name: "no quota", op: admissionv1.Create, wantCalls: map[fakebroker.Op]int{fakebroker.OpProvision: 1}},
		{name: "a unit left", quotas: []runtime.Object{oneLeft}, op: admissionv1.Create, wantCalls: map[fakebroker.Op]int{fakebroker.OpProvision: 1}},
		{name: "at the quota: refused, the broker not called", quotas: []runtime.Object{full}, op: admissionv1.Create,
			wantMsg: `exceeded quota: q, requested: count/serviceinstances.lockstep.dev=1, used: count/serviceinstances.lockstep.dev=1, limited: count/serviceinstances.lockstep.dev=1: ` +
				`ResourceQuota "q" of namespace "team" limits serviceinstances.lockstep.dev to 1 and counts 1 in use, so the API server would refuse this create after lockstep; ` +
				`nothing was created and the broker was not called; delete a ServiceInstance of this namespace first, or ask a cluster administrator to raise the quota (kubectl describe quota q -n team)`},
		{name: "a dry run is refused too", quotas: []runtime.Object{full}, op: admissionv1.Create, dryRun: true, wantMsg: "exceeded quota: q,"},
		{name: "a dry run with a unit left is allowed", quotas: []runtime.Object{oneLeft}, op: admissionv1.Create, dryRun: true},
		{name: "a quota without a status yet limits nothing, as at the API server",
			quotas: []runtime.Object{resourceQuota("q", nil, nil, func(q *corev1.ResourceQuota) { q.Spec.Hard[countInstances] = resource.MustParse("0") })},
			op:     admissionv1.Create, wantCalls: map[fakebroker.Op]int{fakebroker.OpProvision: 1}},
		{name: "a quota whose use is not counted yet refuses, as at the API server",
			quotas: []runtime.Object{resourceQuota("q", map[string]int64{countInstances: 5}, map[string]int64{countInstances: -1})}, op: admissionv1.Create,
			wantMsg: `status unknown for quota: q, resources: count/serviceinstances.lockstep.dev: ResourceQuota "q" of namespace "team" limits serviceinstances.lockstep.dev, ` +
				`and records no use of them yet, so the API server would refuse this create after lockstep; nothing was created and the broker was not called`},
		{name: "a scoped quota counts no custom resource",
			quotas: []runtime.Object{resourceQuota("q", map[string]int64{countInstances: 0}, map[string]int64{countInstances: 0}, func(q *corev1.ResourceQuota) {
				q.Spec.Scopes = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeNotBestEffort}
			})}, op: admissionv1.Create, wantCalls: map[fakebroker.Op]int{fakebroker.OpProvision: 1}},
		{name: "a quota of bindings does not limit instances", quotas: []runtime.Object{resourceQuota("q", map[string]int64{countBindings: 0}, map[string]int64{countBindings: 0})},
			op: admissionv1.Create, wantCalls: map[fakebroker.Op]int{fakebroker.OpProvision: 1}},
		{name: "an update at the quota is not a create", quotas: []runtime.Object{full}, op: admissionv1.Update, wantCalls: map[fakebroker.Op]int{fakebroker.OpUpdate: 1}},
		{name: "a delete at the quota neither", quotas: []runtime.Object{full}, op: admissionv1.Delete, wantCalls: map[fakebroker.Op]int{fakebroker.OpDeprovision: 1}},
		{name: "a bind at the quota of bindings", bind: true, op: admissionv1.Create,
			quotas:  []runtime.Object{resourceQuota("b", map[string]int64{countBindings: 3}, map[string]int64{countBindings: 3})},
			wantMsg: `exceeded quota: b, requested: count/servicebindings.lockstep.dev=1, used: count/servicebindings.lockstep.dev=3, limited: count/servicebindings.lockstep.dev=3: ResourceQuota "b" of namespace "team" limits servicebindings.lockstep.dev to 3`},
		{name: "a bind with a full quota of instances", bind: true, op: admissionv1.Create, quotas: []runtime.Object{full},
			wantCalls: map[fakebroker.Op]int{fakebroker.OpBind: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objects := tt.quotas
			if tt.bind {
				objects = append(objects, instance("small", ""))
			}
			h := newHarness(t, objects...)
			if tt.op != admissionv1.Create || tt.bind {
				h.broker.PutInstance(fakebroker.Instance{ID: "ext-1", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID})
			}
			d := h.deps
			d.Quotas = h.client
			var err error
			if tt.bind {
				h.bindings = NewBindingValidator(d, nil)
				_, err = h.admitBinding(tt.op, nil, binding(""), tt.dryRun)
			} else {
				h.validator = NewInstanceValidator(d, nil)
				old, new := instance("small", ""), instance("small", `{"storageGB": 3}`)
				switch tt.op {
				case admissionv1.Create:
					old = nil
				case admissionv1.Delete:
					new = nil
				}
				_, err = h.admit(tt.op, old, new, tt.dryRun)
			}
			calls := map[fakebroker.Op]int{}
			for _, c := range h.broker.Calls() {
				if c.Op != fakebroker.OpCatalog && c.Op != fakebroker.OpGetInstance {
					calls[c.Op]++
				}
			}
			if tt.wantMsg == "" {
				require.NoError(t, err)
				if tt.wantCalls == nil {
					tt.wantCalls = map[fakebroker.Op]int{}
				}
				assert.Equal(t, tt.wantCalls, calls)
				return
			}
			require.Error(t, err)
			assert.True(t, apierrors.IsForbidden(err), "403, as the API server answers: %v", err)
			assert.Contains(t, err.Error(), tt.wantMsg)
			assert.Empty(t, calls, "the broker is not called")
			var leases coordinationv1.LeaseList
			require.NoError(t, h.client.List(context.Background(), &leases))
			assert.Empty(t, leases.Items, "no lock taken")
			var ops v1alpha1.BrokerOperationList
			require.NoError(t, h.client.List(context.Background(), &ops))
			assert.Empty(t, ops.Items, "nothing journaled")
		})
	}
}

// Two creates through one replica for the last unit of a quota: while
// the first is being carried out (held here as it writes its lock), the
// second is refused, naming the create in flight; once the broker refused
// the first, its unit is free again.
func TestResourceQuotasCountCreatesInFlight(t *testing.T) {
	entered, proceed := make(chan struct{}), make(chan struct{})
	var once sync.Once
	h := newInterceptedHarness(t, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if l, ok := obj.(*coordinationv1.Lease); ok && strings.Contains(l.Name, "ext-a") {
				once.Do(func() { close(entered) })
				<-proceed
			}
			return c.Create(ctx, obj, opts...)
		},
	}, resourceQuota("q", map[string]int64{countInstances: 2}, map[string]int64{countInstances: 1}))
	d := h.deps
	d.Quotas = h.client
	h.validator = NewInstanceValidator(d, nil)
	named := func(name string) Instance {
		return instance("small", "", func(si *v1alpha1.ServiceInstance) {
			si.Name, si.UID, si.Spec.ExternalID = name, types.UID("uid-"+name), "ext-"+name
		})
	}
	h.broker.Script(fakebroker.OpProvision, fakebroker.Respond{Status: http.StatusBadRequest, Error: "Nope", Description: "no room at the broker"})

	var wg sync.WaitGroup
	var first error
	wg.Go(func() { _, first = h.admitNoWait(admissionv1.Create, nil, named("a"), false) })
	<-entered
	_, err := h.admitNoWait(admissionv1.Create, nil, named("b"), false)
	require.Error(t, err)
	assert.True(t, apierrors.IsForbidden(err))
	assert.Contains(t, err.Error(), "used: count/serviceinstances.lockstep.dev=2, limited: count/serviceinstances.lockstep.dev=2")
	assert.Contains(t, err.Error(), "counts 1 in use (and 1 more being created)")
	close(proceed)
	wg.Wait()
	h.answers.Wait()
	require.Error(t, first, "the broker refused the first")
	assert.Contains(t, first.Error(), "no room at the broker")

	_, err = h.admit(admissionv1.Create, nil, named("c"), false)
	require.NoError(t, err, "the unit the refused create held is free again")
	assert.Equal(t, 2, h.broker.Count(fakebroker.OpProvision))
}
