package servicebroker

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/access"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
	"github.com/lockstep-dev/lockstep/internal/catalog"
)

func newReconciler(t *testing.T, objects ...client.Object) (*Reconciler, client.Client) {
	t.Helper()
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objects...).
		WithStatusSubresource(&v1alpha1.ServiceBroker{}).Build()
	r := &Reconciler{Client: c, Secrets: c, Namespace: "lockstep-system", Cache: catalog.NewCache(time.Hour), Access: access.NewStore(), Timeout: 5 * time.Second}
	r.Cache.SetFetcher(r.Fetch)
	return r, c
}

func reconcile(t *testing.T, r *Reconciler, c client.Client, name string) (*v1alpha1.ServiceBroker, ctrl.Result, error) {
	t.Helper()
	res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Name: name}})
	var sb v1alpha1.ServiceBroker
	require.NoError(t, c.Get(context.Background(), client.ObjectKey{Name: name}, &sb))
	return &sb, res, err
}

func TestReconcileLoadsTheCatalogAndSummarizesIt(t *testing.T) {
	b := fakebroker.New(t, fakebroker.WithBasicAuth("lockstep", "s3cret"))
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "lockstep-system", Name: "acme-auth"},
		Data: map[string][]byte{"username": []byte("lockstep"), "password": []byte("s3cret")}}
	sb := &v1alpha1.ServiceBroker{ObjectMeta: metav1.ObjectMeta{Name: "acme"}, Spec: v1alpha1.ServiceBrokerSpec{
		URL: b.URL(), RelistInterval: &metav1.Duration{Duration: time.Minute},
		AuthSecretRef: &v1alpha1.SecretReference{Namespace: "lockstep-system", Name: "acme-auth"},
	}}
	r, c := newReconciler(t, sb, secret)

	got, res, err := reconcile(t, r, c, "acme")
	require.NoError(t, err)
	assert.Equal(t, time.Minute, res.RequeueAfter, "the catalog is fetched again every relistInterval")
	ready := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
	require.NotNil(t, ready)
	assert.Equal(t, metav1.ConditionTrue, ready.Status)
	assert.Equal(t, "catalog loaded: 2 services, 5 plans", ready.Message)
	require.Len(t, got.Status.Services, 2)
	assert.Equal(t, "db", got.Status.Services[0].Name)
	assert.True(t, got.Status.Services[0].PlanUpdateable)
	assert.Len(t, got.Status.Services[0].Plans, 3)
	assert.NotNil(t, got.Status.LastCatalogSync)

	_, ok := r.Cache.Get("acme")
	assert.True(t, ok)
}

func TestReconcileFailureSaysWhyAndKeepsTheLastCatalog(t *testing.T) {
	b := fakebroker.New(t)
	sb := &v1alpha1.ServiceBroker{ObjectMeta: metav1.ObjectMeta{Name: "acme"}, Spec: v1alpha1.ServiceBrokerSpec{URL: b.URL()}}
	r, c := newReconciler(t, sb)
	_, _, err := reconcile(t, r, c, "acme")
	require.NoError(t, err)
	before, _ := r.Cache.Get("acme")

	b.Always(fakebroker.OpCatalog, fakebroker.Respond{Status: http.StatusInternalServerError, Description: "catalog service down"})
	got, res, err := reconcile(t, r, c, "acme")
	require.NoError(t, err)
	assert.Equal(t, time.Second, res.RequeueAfter, "a failed fetch is retried")
	ready := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
	require.NotNil(t, ready)
	assert.Equal(t, metav1.ConditionFalse, ready.Status)
	assert.Equal(t, "CatalogUnavailable", ready.Reason)
	assert.Contains(t, ready.Message, "catalog service down")
	after, _ := r.Cache.Get("acme")
	assert.Same(t, before, after, "admission goes on with the last good catalog")
}

// TestReconcileRetriesAFailingBrokerWithinHalfAMinute: after many failed
// fetches in a row (a long outage) the next comes within 30 seconds, not
// after the workqueue's back-off of up to a quarter of an hour; a success
// starts over.
func TestReconcileRetriesAFailingBrokerWithinHalfAMinute(t *testing.T) {
	b := fakebroker.New(t)
	sb := &v1alpha1.ServiceBroker{ObjectMeta: metav1.ObjectMeta{Name: "acme"}, Spec: v1alpha1.ServiceBrokerSpec{URL: b.URL()}}
	r, c := newReconciler(t, sb)
	b.Always(fakebroker.OpCatalog, fakebroker.Respond{Status: http.StatusServiceUnavailable})
	var waits []time.Duration
	for range 8 {
		_, res, err := reconcile(t, r, c, "acme")
		require.NoError(t, err, "not the workqueue's back-off")
		waits = append(waits, res.RequeueAfter)
	}
	assert.Equal(t, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second,
		30 * time.Second, 30 * time.Second, 30 * time.Second}, waits)
	b.Reset()
	_, _, err := reconcile(t, r, c, "acme")
	require.NoError(t, err)
	b.Always(fakebroker.OpCatalog, fakebroker.Respond{Status: http.StatusServiceUnavailable})
	_, res, err := reconcile(t, r, c, "acme")
	require.NoError(t, err)
	assert.Equal(t, time.Second, res.RequeueAfter, "a success starts the waits over")
}

func TestReconcileMissingSecretKeyNamesIt(t *testing.T) {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "lockstep-system", Name: "auth"}, Data: map[string][]byte{"username": []byte("u")}}
	sb := &v1alpha1.ServiceBroker{ObjectMeta: metav1.ObjectMeta{Name: "acme"}, Spec: v1alpha1.ServiceBrokerSpec{
		URL: "http://127.0.0.1:1", AuthSecretRef: &v1alpha1.SecretReference{Namespace: "lockstep-system", Name: "auth"},
	}}
	r, c := newReconciler(t, sb, secret)
	got, _, err := reconcile(t, r, c, "acme")
	require.NoError(t, err)
	ready := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
	require.NotNil(t, ready)
	assert.Contains(t, ready.Message, `secret lockstep-system/auth has no key "password", needed for basic authentication`)
}

// TestReconcileRefusesCredentialsLockstepMayNotUse: a ServiceBroker
// written before admission checked it (or with the webhook down) whose
// credentials are outside lockstep's namespace, or would go over plain
// http, is never called with them: it is not Ready, and says why and what
// to do.
func TestReconcileRefusesCredentialsLockstepMayNotUse(t *testing.T) {
	b := fakebroker.New(t)
	tests := []struct {
		name   string
		url    string
		secret string // namespace of the Secret
		want   string
	}{
		{name: "a Secret in a user's namespace", url: b.URL(), secret: "team",
			want: `spec.authSecretRef names Secret team/auth, and lockstep reads a broker's credentials only from its own namespace "lockstep-system": move the Secret there`},
		{name: "credentials over plain http", url: "http://broker.example:8080", secret: "lockstep-system",
			want: "broker URL http://broker.example:8080 is plain http: lockstep sends credentials (basic auth) only over https, or to a loopback address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: tt.secret, Name: "auth"},
				Data: map[string][]byte{"username": []byte("u"), "password": []byte("p")}}
			sb := &v1alpha1.ServiceBroker{ObjectMeta: metav1.ObjectMeta{Name: "acme"}, Spec: v1alpha1.ServiceBrokerSpec{
				URL: tt.url, AuthSecretRef: &v1alpha1.SecretReference{Namespace: tt.secret, Name: "auth"}}}
			r, c := newReconciler(t, sb, secret)
			got, _, err := reconcile(t, r, c, "acme")
			require.NoError(t, err)
			ready := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
			require.NotNil(t, ready)
			assert.Equal(t, metav1.ConditionFalse, ready.Status)
			assert.Contains(t, ready.Message, tt.want)
			assert.Zero(t, b.Count(fakebroker.OpCatalog), "the broker was never called")
		})
	}
}

// loadedBroker is ServiceBroker "acme" at a test broker, with an instance
// on plan, whose catalog the reconciler loaded once.
func loadedBroker(t *testing.T, plan string) (*fakebroker.Broker, *Reconciler, client.Client) {
	t.Helper()
	b := fakebroker.New(t)
	sb := &v1alpha1.ServiceBroker{ObjectMeta: metav1.ObjectMeta{Name: "acme"}, Spec: v1alpha1.ServiceBrokerSpec{URL: b.URL()}}
	user := &v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "team"},
		Spec: v1alpha1.ServiceInstanceSpec{BrokerName: "acme", ServiceName: "db", PlanName: plan}}
	r, c := newReconciler(t, sb, user)
	_, _, err := reconcile(t, r, c, "acme")
	require.NoError(t, err)
	return b, r, c
}

func TestRemovedPlanStaysWhileInstancesUseIt(t *testing.T) {
	b, r, c := loadedBroker(t, "large")

	reduced := fakebroker.DefaultCatalog()
	plans := reduced.Services[0].Plans
	reduced.Services[0].Plans = []osbapi.Plan{plans[0]} // "large" and "fixed" leave
	require.NoError(t, b.SetCatalog(reduced))

	got, _, err := reconcile(t, r, c, "acme")
	require.NoError(t, err)
	e, _ := r.Cache.Get("acme")
	large, err := e.Find("db", "large")
	require.NoError(t, err, "an instance still uses it")
	assert.True(t, large.Removed)
	_, err = e.Find("db", "fixed")
	assert.Error(t, err, "nobody uses it: it is gone")

	var marked []string
	for _, p := range got.Status.Services[0].Plans {
		if p.RemovedFromCatalog {
			marked = append(marked, p.Name)
		}
	}
	assert.Equal(t, []string{"large"}, marked)

	// After a restart the status remembers the removed plan.
	r2, _ := newReconciler(t)
	r2.Client = c
	r2.Secrets = c
	_, err = r2.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Name: "acme"}})
	require.NoError(t, err)
	e2, _ := r2.Cache.Get("acme")
	large, err = e2.Find("db", "large")
	require.NoError(t, err)
	assert.True(t, large.Removed)
}

func TestReconcileForgetsDeletedBrokers(t *testing.T) {
	r, _ := newReconciler(t)
	r.Cache.Store(catalog.NewEntry("gone", nil, &osbapi.Catalog{}, nil, time.Now()))
	_, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Name: "gone"}})
	require.NoError(t, err)
	_, ok := r.Cache.Get("gone")
	assert.False(t, ok)
}

// The access rules are compiled into the Store that admission reads, in
// force even while the catalog cannot be fetched, and the AccessRules
// condition says whether they can be used.
func TestReconcileKeepsTheAccessRules(t *testing.T) {
	b := fakebroker.New(t)
	open := v1alpha1.AccessRule{Name: "team-a", NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}},
		Services: []string{"*"}, Plans: []string{"*"}}
	broken := v1alpha1.AccessRule{Name: "broken", NamespaceSelector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "team", Operator: "Near"}}}, Services: []string{"*"}, Plans: []string{"*"}}
	tests := []struct {
		name       string
		url        string
		rules      []v1alpha1.AccessRule
		wantStatus metav1.ConditionStatus
		wantReason string
		allowedB   bool
	}{
		{name: "none: open", url: b.URL(), wantStatus: metav1.ConditionTrue, wantReason: "Open", allowedB: true},
		{name: "in force", url: b.URL(), rules: []v1alpha1.AccessRule{open}, wantStatus: metav1.ConditionTrue, wantReason: "InForce"},
		{name: "in force while the broker is down", url: "http://127.0.0.1:1", rules: []v1alpha1.AccessRule{open}, wantStatus: metav1.ConditionTrue, wantReason: "InForce"},
		{name: "cannot be used: closed", url: b.URL(), rules: []v1alpha1.AccessRule{open, broken}, wantStatus: metav1.ConditionFalse, wantReason: "Invalid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, c := newReconciler(t, &v1alpha1.ServiceBroker{ObjectMeta: metav1.ObjectMeta{Name: "acme"}, Spec: v1alpha1.ServiceBrokerSpec{URL: tt.url, Access: tt.rules}})
			got, _, _ := reconcile(t, r, c, "acme")
			cond := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionAccessRules)
			require.NotNil(t, cond)
			assert.Equal(t, tt.wantStatus, cond.Status, cond.Message)
			assert.Equal(t, tt.wantReason, cond.Reason)
			assert.Equal(t, tt.allowedB, r.Access.Get("acme").Decide("b", map[string]string{"team": "b"}, "db", "small").Allowed)
			assert.True(t, r.Access.Get("acme").Decide("a", map[string]string{"team": "a"}, "db", "small").Allowed || tt.wantReason == "Invalid")

			require.NoError(t, c.Delete(context.Background(), got))
			_, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Name: "acme"}})
			require.NoError(t, err)
			assert.Nil(t, r.Access.Get("acme"), "a deleted broker's rules are forgotten")
		})
	}
}
