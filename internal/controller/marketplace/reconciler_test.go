package marketplace

import (
	"context"
	"encoding/json"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/dynamic"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
	"github.com/lockstep-dev/lockstep/internal/catalog"
	"github.com/lockstep-dev/lockstep/internal/typed/inuse"
)

// harness is the reconciler over a fake API server that counts writes.
type harness struct {
	t        *testing.T
	client   client.Client
	catalogs *catalog.Cache
	r        *Reconciler
	writes   int
	// kinds are the objects of typed kinds, by resource; lists lists them.
	kinds inuse.Static
	lists *listing
	// refuse, when set, is the API server's answer to a dry run.
	refuse error
	// served are the resources the API server serves (its discovery).
	served *fakediscovery.FakeDiscovery
}

func newHarness(t *testing.T, objs ...client.Object) *harness {
	scheme := runtime.NewScheme()
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	require.NoError(t, apiextensionsv1.AddToScheme(scheme))
	require.NoError(t, rbacv1.AddToScheme(scheme))
	h := &harness{t: t, catalogs: catalog.NewCache(time.Second), kinds: inuse.Static{}}
	h.lists = &listing{objects: h.kinds}
	sb := &v1alpha1.ServiceBroker{ObjectMeta: metav1.ObjectMeta{Name: "acme", UID: "acme-uid"}}
	count := func() { h.writes++ }
	h.client = fake.NewClientBuilder().WithScheme(scheme).
		WithObjects(append(objs, sb)...).
		WithStatusSubresource(&v1alpha1.ServiceOffering{}, &v1alpha1.ServicePlan{}, &v1alpha1.ServiceBroker{}, &apiextensionsv1.CustomResourceDefinition{}).
		WithInterceptorFuncs(interceptor.Funcs{
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				count()
				return c.Create(ctx, obj, opts...)
			},
			Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
				count()
				return c.Update(ctx, obj, opts...)
			},
			Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
				count()
				return c.Patch(ctx, obj, p, opts...)
			},
			Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
				count()
				return c.Delete(ctx, obj, opts...)
			},
			Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
				var o client.ApplyOptions
				o.ApplyOptions(opts)
				if len(o.DryRun) > 0 && h.refuse != nil {
					return h.refuse
				}
				return c.Apply(ctx, obj, opts...)
			},
			SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
				count()
				return c.SubResource(sub).Update(ctx, obj, opts...)
			},
		}).Build()
	h.served = &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "pods", SingularName: "pod", Kind: "Pod", ShortNames: []string{"po"}},
			{Name: "secrets", SingularName: "secret", Kind: "Secret"},
		}},
		{GroupVersion: "batch.example.com/v1", APIResources: []metav1.APIResource{
			{Name: "queuedjobs", SingularName: "queuedjob", Kind: "QueuedJob", ShortNames: []string{"qd"}},
		}},
	}}}
	h.r = &Reconciler{Client: h.client, Catalogs: h.catalogs, Reader: h.client, Kinds: h.lists, Discovery: h.served}
	return h
}

// listing is a dynamic client over objects that records the resources it
// lists, calls before (when set) ahead of each list, and answers err to
// each list while err is set.
type listing struct {
	objects inuse.Static
	listed  []string
	err     error
	before  func(schema.GroupVersionResource)
}

func (l *listing) Resource(gvr schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	return listingResource{NamespaceableResourceInterface: l.objects.Resource(gvr), l: l, gvr: gvr}
}

type listingResource struct {
	dynamic.NamespaceableResourceInterface
	l   *listing
	gvr schema.GroupVersionResource
}

func (r listingResource) List(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	if r.l.before != nil {
		r.l.before(r.gvr)
	}
	r.l.listed = append(r.l.listed, r.gvr.Resource)
	if r.l.err != nil {
		return nil, r.l.err
	}
	return r.NamespaceableResourceInterface.List(ctx, opts)
}

// sync stores cat (with the removed plans in use) as the catalog of
// broker acme, reconciles, and returns how many writes it made.
func (h *harness) sync(cat osbapi.Catalog, removed ...osbapi.ServicePlan) int {
	h.t.Helper()
	return h.syncBroker("acme", cat, removed...)
}

// syncBroker is sync for the broker of that name.
func (h *harness) syncBroker(broker string, cat osbapi.Catalog, removed ...osbapi.ServicePlan) int {
	h.t.Helper()
	require.NoError(h.t, cat.Validate())
	h.catalogs.Store(catalog.NewEntry(broker, nil, &cat, removed, time.Now()))
	before := h.writes
	_, err := h.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Name: broker}})
	require.NoError(h.t, err)
	return h.writes - before
}

func (h *harness) plans() map[string]v1alpha1.ServicePlan {
	var list v1alpha1.ServicePlanList
	require.NoError(h.t, h.client.List(context.Background(), &list))
	out := map[string]v1alpha1.ServicePlan{}
	for _, p := range list.Items {
		out[p.Name] = p
	}
	return out
}

func (h *harness) offerings() []string {
	var list v1alpha1.ServiceOfferingList
	require.NoError(h.t, h.client.List(context.Background(), &list))
	var out []string
	for _, o := range list.Items {
		name := o.Name
		if o.Status.RemovedFromCatalog {
			name += " (removed)"
		}
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestSyncWritesOnlyWhatChanged(t *testing.T) {
	h := newHarness(t)
	cat := fakebroker.DefaultCatalog()

	// 2 offerings (a create each) and 5 plans (a create and a status write each).
	assert.Equal(t, 12, h.sync(cat), "first sync")
	assert.Equal(t, []string{"acme.db", "acme.queue"}, h.offerings())
	assert.Equal(t, []string{"acme.db.fixed", "acme.db.large", "acme.db.small", "acme.queue.shared", "acme.queue.standard"}, keys(h.plans()))

	small := h.plans()["acme.db.small"]
	assert.Equal(t, "db", small.Spec.ServiceName)
	assert.Equal(t, []string{"region"}, small.Spec.CreateOnlyParameters)
	assert.Equal(t, []metav1.OwnerReference{{APIVersion: "lockstep.dev/v1alpha1", Kind: "ServiceBroker", Name: "acme", UID: "acme-uid", Controller: ptr.To(true)}},
		small.OwnerReferences)
	assert.Equal(t, "acme", small.Labels[v1alpha1.LabelBroker])
	require.NotNil(t, small.Spec.Schemas)
	require.NotNil(t, small.Spec.Schemas.InstanceCreate)

	tests := []struct {
		name   string
		change func(c *osbapi.Catalog)
		writes int
	}{
		{"nothing changed", func(*osbapi.Catalog) {}, 0},
		{"nothing changed, schemas re-spaced and re-ordered by the broker", func(c *osbapi.Catalog) {
			s := c.Services[0].Plans[0].Schemas.ServiceInstance.Create
			var v map[string]any
			require.NoError(t, json.Unmarshal(s.Parameters, &v))
			s.Parameters, _ = json.MarshalIndent(v, "", "    ")
		}, 0},
		{"a plan's description", func(c *osbapi.Catalog) { c.Services[0].Plans[0].Description = "changed" }, 1},
		{"a service's tags", func(c *osbapi.Catalog) { c.Services[1].Tags = []string{"new"} }, 1},
		{"a plan's schema", func(c *osbapi.Catalog) {
			c.Services[0].Plans[1].Schemas.ServiceInstance.Update.Parameters = json.RawMessage(`{"type":"object"}`)
		}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.change(&cat)
			assert.Equal(t, tt.writes, h.sync(cat))
			assert.Equal(t, 0, h.sync(cat), "again, unchanged")
		})
	}
}

func TestRemovedPlansAreMarkedWhileInUseThenDeleted(t *testing.T) {
	instance := &v1alpha1.ServiceInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db"},
		Spec:       v1alpha1.ServiceInstanceSpec{BrokerName: "acme", ServiceName: "db", PlanName: "small"},
	}
	h := newHarness(t, instance)
	full := fakebroker.DefaultCatalog()
	h.sync(full)

	// "queue" leaves the catalog (no instance uses it), and so does "small"
	// (an instance uses it).
	cut := fakebroker.DefaultCatalog()
	cut.Services = cut.Services[:1]
	small := cut.Services[0].Plans[0]
	cut.Services[0].Plans = cut.Services[0].Plans[1:]
	removed := osbapi.ServicePlan{Service: &full.Services[0], Plan: &small}
	h.sync(cut, removed)
	assert.Equal(t, []string{"acme.db"}, h.offerings(), "an unused service goes with its plans")
	plans := h.plans()
	assert.Equal(t, []string{"acme.db.fixed", "acme.db.large", "acme.db.small"}, keys(plans))
	assert.True(t, plans["acme.db.small"].Status.RemovedFromCatalog, "in use: marked")
	assert.False(t, plans["acme.db.large"].Status.RemovedFromCatalog)
	assert.Equal(t, 0, h.sync(cut, removed), "marked once")

	// The whole service leaves; its plan in use keeps it, marked.
	h.sync(osbapi.Catalog{Services: []osbapi.Service{}}, removed)
	assert.Equal(t, []string{"acme.db (removed)"}, h.offerings())
	assert.Equal(t, []string{"acme.db.small"}, keys(h.plans()))

	// The instance goes: so do the plan and its service.
	require.NoError(t, h.client.Delete(context.Background(), instance))
	h.sync(osbapi.Catalog{Services: []osbapi.Service{}}, removed)
	assert.Empty(t, h.offerings())
	assert.Empty(t, h.plans())
}

func TestUnusableSchemasAreConditions(t *testing.T) {
	h := newHarness(t)
	cat := fakebroker.DefaultCatalog()
	plans := cat.Services[1].Plans
	plans[0].Schemas = &osbapi.Schemas{ServiceInstance: &osbapi.ServiceInstanceSchemas{
		Create: &osbapi.InputParameters{Parameters: json.RawMessage(`{"type":"object","properties":{"a":{"$ref":"https://example.com/a.json"}}}`)}}}
	plans[1].Schemas = &osbapi.Schemas{ServiceInstance: &osbapi.ServiceInstanceSchemas{
		Create: &osbapi.InputParameters{Parameters: json.RawMessage(`{"type":"string"}`)}}}
	h.sync(cat)
	got := h.plans()
	reason := func(name string) string {
		for _, c := range got[name].Status.Conditions {
			if c.Type == v1alpha1.ConditionSchemasUsable {
				return string(c.Status) + " " + c.Reason
			}
		}
		return "none"
	}
	assert.Equal(t, "True Usable", reason("acme.db.small"))
	assert.Equal(t, "False RemoteReference", reason("acme.queue.standard"))
	assert.Equal(t, "False NotAnObjectSchema", reason("acme.queue.shared"))
}

// A broker restarted with new ids for the same services and plans: the
// marketplace objects keep their names and follow the new ids, one update
// each, instead of being marked removed while new ones cannot be created
// under the names they hold.
func TestMarketplaceFollowsNewIDs(t *testing.T) {
	h := newHarness(t)
	cat := fakebroker.DefaultCatalog()
	require.Equal(t, 12, h.sync(cat))

	for i := range cat.Services {
		cat.Services[i].ID += "-v2"
		for j := range cat.Services[i].Plans {
			cat.Services[i].Plans[j].ID += "-v2"
		}
	}
	assert.Equal(t, 7, h.sync(cat), "an update of each offering and plan")
	assert.Equal(t, []string{"acme.db", "acme.queue"}, h.offerings(), "none removed")
	plans := h.plans()
	assert.Equal(t, []string{"acme.db.fixed", "acme.db.large", "acme.db.small", "acme.queue.shared", "acme.queue.standard"}, keys(plans))
	small := plans["acme.db.small"]
	assert.Equal(t, fakebroker.PlanSmallID+"-v2", small.Spec.ID)
	assert.Equal(t, fakebroker.ServiceDBID+"-v2", small.Spec.ServiceID)
	assert.False(t, small.Status.RemovedFromCatalog)
	assert.Equal(t, 0, h.sync(cat), "then nothing to write")
}

// Each plan shows which namespaces may use it; a change of the broker's
// access rules rewrites the plans whose access changed, and only those.
func TestPlansShowTheirAccess(t *testing.T) {
	h := newHarness(t)
	cat := fakebroker.DefaultCatalog()
	h.sync(cat)
	assert.Equal(t, v1alpha1.PlanAccess{Namespaces: "all"}, h.plans()["acme.db.large"].Spec.Access, "no rules: open to all")

	var sb v1alpha1.ServiceBroker
	require.NoError(t, h.client.Get(context.Background(), client.ObjectKey{Name: "acme"}, &sb))
	sb.Spec.Access = []v1alpha1.AccessRule{
		{Name: "team-a", NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}, Services: []string{"db"}, Plans: []string{"*"}},
		{Name: "everyone-small", Services: []string{"db"}, Plans: []string{"small"}},
	}
	require.NoError(t, h.client.Update(context.Background(), &sb))
	assert.Equal(t, 5, h.sync(cat), "every plan's access changed")
	plans := h.plans()
	assert.Equal(t, v1alpha1.PlanAccess{Namespaces: "team=a", Rules: []string{"team-a"}}, plans["acme.db.large"].Spec.Access)
	assert.Equal(t, v1alpha1.PlanAccess{Namespaces: "all", Rules: []string{"team-a", "everyone-small"}}, plans["acme.db.small"].Spec.Access)
	assert.Equal(t, v1alpha1.PlanAccess{Namespaces: "none"}, plans["acme.queue.shared"].Spec.Access)
	assert.Equal(t, 0, h.sync(cat), "again, unchanged")
}

// TestOnlyAnInstanceOfARemovedPlanAsksForTheMarketplace: an instance that
// goes (or leaves its plan) asks for its broker's marketplace again only
// when its plan may leave it: the catalog no longer offers it, or no
// catalog is loaded. A plan the catalog offers stays whatever its
// instances do.
func TestOnlyAnInstanceOfARemovedPlanAsksForTheMarketplace(t *testing.T) {
	h := newHarness(t)
	full := fakebroker.DefaultCatalog()
	cut := fakebroker.DefaultCatalog()
	small := cut.Services[0].Plans[0]
	cut.Services[0].Plans = cut.Services[0].Plans[1:]
	h.catalogs.Store(catalog.NewEntry("acme", nil, &cut, []osbapi.ServicePlan{{Service: &full.Services[0], Plan: &small}}, time.Now()))
	of := func(broker, service, plan string) client.Object {
		return &v1alpha1.ServiceInstance{Spec: v1alpha1.ServiceInstanceSpec{BrokerName: broker, ServiceName: service, PlanName: plan}}
	}
	tests := []struct {
		name     string
		instance client.Object
		want     bool
	}{
		{"a plan the catalog offers", of("acme", "db", "large"), false},
		{"a plan removed, kept while in use", of("acme", "db", "small"), true},
		{"a plan no catalog knows", of("acme", "db", "gone"), true},
		{"a broker with no catalog loaded", of("other", "db", "large"), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, h.r.planMayGo(tt.instance))
		})
	}
}
