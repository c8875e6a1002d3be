package typedkinds_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/app"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/controller/brokered"
	"github.com/lockstep-dev/lockstep/internal/controller/controllertest"
	"github.com/lockstep-dev/lockstep/internal/controller/resync"
	"github.com/lockstep-dev/lockstep/internal/controller/typedkinds"
	"github.com/lockstep-dev/lockstep/internal/journal"
	"github.com/lockstep-dev/lockstep/internal/typed/object"
	"github.com/lockstep-dev/lockstep/internal/typed/render"
)

// lockstepNamespace is where lockstep's locks live, and the records of
// deletes in a namespace being deleted.
const lockstepNamespace = "lockstep-system"

// running is a Watcher in a manager of its own, over a test broker named
// "acme", and the manager's cache. The cache answers a read of a kind it
// has no informer for with an error instead of starting one, so that a
// test sees which informers it holds.
type running struct {
	watcher *typedkinds.Watcher
	cache   cache.Cache
	broker  *fakebroker.Broker
}

func start(t *testing.T) *running {
	t.Helper()
	return startElected(t, nil)
}

// startElected is start with a replica that leads once elected is closed
// (nil: at once).
func startElected(t *testing.T, elected <-chan struct{}) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	mgr, err := ctrl.NewManager(env.config, ctrl.Options{
		Scheme:                 app.Scheme(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache: cache.Options{ReaderFailOnMissingInformer: true, ByObject: map[client.Object]cache.ByObject{
			&apiextensionsv1.CustomResourceDefinition{}: {Label: labels.SelectorFromSet(labels.Set{render.LabelManagedBy: render.ManagedBy})},
		}},
		Client: client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}},
	})
	require.NoError(t, err)
	require.NoError(t, journal.IndexTargetUID(ctx, mgr.GetFieldIndexer()))
	b, catalogs := controllertest.Broker(t, nil)
	leases := &journal.Leases{Client: env.client, Namespace: lockstepNamespace, Duration: time.Minute}
	protocol := controllertest.Protocol(env.client, lockstepNamespace)
	protocol.Catalogs = catalogs
	w := &typedkinds.Watcher{Cache: mgr.GetCache(), Elected: elected, Config: brokered.Config{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Namespace: lockstepNamespace, Catalogs: catalogs,
		Leases: leases, Protocol: protocol, Recorder: record.NewFakeRecorder(1000), Timeout: 10 * time.Second,
		ResyncInterval: time.Second, Limiter: &resync.Limiter{Concurrent: 2}, Workers: 2,
	}}
	require.NoError(t, mgr.Add(w))
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return &running{watcher: w, cache: mgr.GetCache(), broker: b}
}

// namespace creates a namespace for one test.
func namespace(t *testing.T, name string) string {
	t.Helper()
	require.NoError(t, client.IgnoreAlreadyExists(env.client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})))
	return name
}

// installKind installs the kind of service "db" of the test broker's
// default catalog, as the catalog of ServiceBroker acme (see
// controllertest.InstallTypedKind), with lockstep's namespace.
func installKind(t *testing.T) (object.Kind, *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	namespace(t, lockstepNamespace)
	cat := fakebroker.DefaultCatalog()
	return controllertest.InstallTypedKind(t, env.config, "acme", &cat.Services[0])
}

// provisioned is controllertest.ProvisionedTyped, at r's broker.
func provisioned(t *testing.T, r *running, kind object.Kind, ns, name string, annotations map[string]string) {
	t.Helper()
	controllertest.ProvisionedTyped(t, env.client, r.broker, kind, ns, name, annotations)
}

func ready(t *testing.T, kind object.Kind, ns, name string) *v1alpha1.ServiceInstance {
	t.Helper()
	return controllertest.ReadyTyped(t, env.client, kind, ns, name)
}

// informed reports whether the cache holds an informer of kind.
func informed(t *testing.T, r *running, kind object.Kind) bool {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(kind.GVK.GroupVersion().WithKind(kind.GVK.Kind + "List"))
	err := r.cache.List(context.Background(), list)
	var notCached *cache.ErrResourceNotCached
	if errors.As(err, &notCached) {
		return false
	}
	require.NoError(t, err)
	return true
}

// watching reports whether the watcher runs the reconciler of kind.
func watching(r *running, kind object.Kind) bool {
	for _, k := range r.watcher.Running() {
		if k == kind {
			return true
		}
	}
	return false
}

// A typed kind is reconciled from the moment its CRD is established: an
// object gets its status from its records, and resync finds the broker
// holds it as the object says. Deleting the CRD while the object exists:
// the API server deletes the object first (past admission), lockstep's
// finalizer deprovisions it at the broker and lets it go, the CRD goes,
// and its controller stops with its informer removed from the cache.
// Installed again, the kind is reconciled again, without a restart.
func TestATypedKindIsReconciledWhileItsCRDIsEstablished(t *testing.T) {
	ctx := context.Background()
	r := start(t)
	kind, crd := installKind(t)
	require.Eventually(t, func() bool { return watching(r, kind) }, 30*time.Second, 50*time.Millisecond, "the kind is reconciled once its CRD is established")
	assert.True(t, informed(t, r, kind), "the kind's informer is in the cache")

	ns := namespace(t, "typed-lifecycle")
	provisioned(t, r, kind, ns, "db", nil)
	si := ready(t, kind, ns, "db")
	assert.Equal(t, "Provisioned", meta.FindStatusCondition(si.Status.Conditions, v1alpha1.ConditionReady).Reason)
	require.NotNil(t, si.Status.LastApplied, "what was applied is recorded, for resync")
	require.Eventually(t, func() bool { return r.broker.Count(fakebroker.OpGetInstance) > 0 }, 30*time.Second, 100*time.Millisecond,
		"resync reads the object from its broker")

	require.NoError(t, env.client.Delete(ctx, crd))
	require.Eventually(t, func() bool {
		return apierrors.IsNotFound(env.client.Get(ctx, client.ObjectKeyFromObject(crd), &apiextensionsv1.CustomResourceDefinition{}))
	}, 60*time.Second, 100*time.Millisecond, "the CRD goes once lockstep let its object go")
	assert.Equal(t, 1, r.broker.Count(fakebroker.OpDeprovision), "the object deleted past admission is deprovisioned, once")
	require.Eventually(t, func() bool { return !watching(r, kind) }, 30*time.Second, 50*time.Millisecond, "the kind's controller stops")
	assert.False(t, informed(t, r, kind), "no informer of the kind is left in the cache")

	kind, _ = installKind(t)
	require.Eventually(t, func() bool { return watching(r, kind) }, 30*time.Second, 50*time.Millisecond, "installed again, the kind is reconciled again")
	provisioned(t, r, kind, ns, "db-again", nil)
	ready(t, kind, ns, "db-again")
	deleteKind(t, crd)
}

// Deleting a namespace with objects of a typed kind finishes: the
// namespace controller deletes the objects (past admission, in these
// tests), lockstep's finalizer deprovisions each and lets it go, but for
// one whose reconcile policy is detach-on-delete, which the broker keeps.
func TestANamespaceWithATypedObjectIsDeleted(t *testing.T) {
	ctx := context.Background()
	r := start(t)
	kind, crd := installKind(t)
	defer deleteKind(t, crd)
	require.Eventually(t, func() bool { return watching(r, kind) }, 30*time.Second, 50*time.Millisecond)
	ns := namespace(t, "typed-namespace")
	provisioned(t, r, kind, ns, "db", nil)
	provisioned(t, r, kind, ns, "kept", map[string]string{v1alpha1.AnnotationReconcilePolicy: string(v1alpha1.PolicyDetachOnDelete)})
	ready(t, kind, ns, "db")
	ready(t, kind, ns, "kept")

	require.NoError(t, env.client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	require.Eventually(t, func() bool {
		return apierrors.IsNotFound(env.client.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{}))
	}, 60*time.Second, 200*time.Millisecond, "the namespace is gone")
	assert.Equal(t, 1, r.broker.Count(fakebroker.OpDeprovision), "the managed object is deprovisioned, once")
	_, kept := r.broker.Instance(ns + "-kept")
	assert.True(t, kept, "the broker keeps the detached object's instance")
}

// Every replica, elected or not, keeps the objects of an established kind
// indexed by spec.externalID, and only the elected one reconciles them:
// the index answers nothing before the kind is established (the caller
// asks the API server), then finds an object by its id until it is
// deleted, and answers nothing once the kind's CRD is gone, with no
// informer left in the cache.
func TestEveryReplicaIndexesATypedKindsExternalIDs(t *testing.T) {
	ctx := context.Background()
	elected := make(chan struct{})
	r := startElected(t, elected)
	kind, crd := installKind(t)
	holders := func(id string) ([]string, bool) {
		held, cached, err := r.watcher.ExternalIDHolders(kind, id)
		require.NoError(t, err)
		var names []string
		for _, u := range held {
			names = append(names, u.GetNamespace()+"/"+u.GetName())
		}
		return names, cached
	}
	require.Eventually(t, func() bool { _, cached := holders("any"); return cached }, 30*time.Second, 50*time.Millisecond,
		"the kind's objects are indexed once its CRD is established")
	assert.Empty(t, r.watcher.Running(), "a replica that does not lead reconciles nothing")

	ns := namespace(t, "typed-index")
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(kind.GVK)
	u.SetNamespace(ns)
	u.SetName("db")
	require.NoError(t, unstructured.SetNestedMap(u.Object, map[string]any{
		"plan": fakebroker.PlanSmall, "brokerName": kind.Broker, "externalID": "ext-index-1",
	}, "spec"))
	require.NoError(t, env.client.Create(ctx, u))
	require.Eventually(t, func() bool { names, _ := holders("ext-index-1"); return len(names) == 1 && names[0] == ns+"/db" },
		30*time.Second, 50*time.Millisecond, "the object is found by its external id")
	names, cached := holders("ext-index-2")
	assert.True(t, cached)
	assert.Empty(t, names, "no object holds another id")
	held, cached := r.watcher.Holds(kind.GVK.Group, kind.GVK.Kind, ns, "db", u.GetUID())
	assert.True(t, held && cached, "the informer holds the object by its name and uid")
	held, _ = r.watcher.Holds(kind.GVK.Group, kind.GVK.Kind, ns, "db", "another-uid")
	assert.False(t, held, "not an object of the same name with another uid")

	require.NoError(t, env.client.Delete(ctx, u))
	require.Eventually(t, func() bool { names, _ := holders("ext-index-1"); return len(names) == 0 },
		30*time.Second, 50*time.Millisecond, "a deleted object holds no id")

	close(elected)
	require.Eventually(t, func() bool { return watching(r, kind) }, 30*time.Second, 50*time.Millisecond,
		"once elected, the replica reconciles the kind on the same informer")

	deleteKind(t, crd)
	require.Eventually(t, func() bool { _, cached := holders("ext-index-1"); return !cached }, 30*time.Second, 50*time.Millisecond,
		"once the CRD is gone, the index answers nothing")
	assert.False(t, informed(t, r, kind), "no informer of the kind is left in the cache")
}

// deleteKind is controllertest.DeleteTypedKind.
func deleteKind(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	controllertest.DeleteTypedKind(t, env.client, crd)
}
