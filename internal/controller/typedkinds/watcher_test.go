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
	w := &typedkinds.Watcher{Cache: mgr.GetCache(), Config: brokered.Config{
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

// installKind renders the kind of the test broker's service "db" and
// installs it; it returns the kind once its CRD is established.
func installKind(t *testing.T, r *running) (object.Kind, *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	ctx := context.Background()
	namespace(t, lockstepNamespace)
	cat := fakebroker.DefaultCatalog()
	crd, _, err := render.Render("acme", &cat.Services[0], render.Options{})
	require.NoError(t, err)
	require.NoError(t, env.client.Create(ctx, crd))
	var kind object.Kind
	require.Eventually(t, func() bool {
		got := &apiextensionsv1.CustomResourceDefinition{}
		if env.client.Get(ctx, client.ObjectKeyFromObject(crd), got) != nil {
			return false
		}
		var ok bool
		kind, ok = object.KindOf(got)
		return ok && isEstablished(got)
	}, 30*time.Second, 100*time.Millisecond, "the CRD is established")
	return kind, crd
}

func isEstablished(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}

// provisioned creates an object of kind, with annotations (key, value,
// ...), as admission would leave it after the broker provisioned it: with
// lockstep's finalizer, its provision's record committed, and the
// instance at the broker.
func provisioned(t *testing.T, r *running, kind object.Kind, ns, name string, annotations ...string) *unstructured.Unstructured {
	t.Helper()
	ctx := context.Background()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(kind.GVK)
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetFinalizers([]string{v1alpha1.Finalizer})
	if len(annotations) > 0 {
		a := map[string]string{}
		for i := 0; i+1 < len(annotations); i += 2 {
			a[annotations[i]] = annotations[i+1]
		}
		u.SetAnnotations(a)
	}
	externalID := ns + "-" + name
	require.NoError(t, unstructured.SetNestedMap(u.Object, map[string]any{
		"plan": fakebroker.PlanSmall, "brokerName": "acme", "externalID": externalID,
		"parameters": map[string]any{"storageGB": int64(10)},
	}, "spec"))
	require.NoError(t, env.client.Create(ctx, u))
	si, err := object.ToInstance(u, kind)
	require.NoError(t, err)

	now := metav1.Now()
	op := &v1alpha1.BrokerOperation{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-provision", Namespace: ns, Labels: map[string]string{journal.LabelTargetUID: string(u.GetUID())}},
		Spec: v1alpha1.BrokerOperationSpec{
			Target:     v1alpha1.OperationTarget{Kind: v1alpha1.TargetKind(kind.GVK.Kind), APIGroup: kind.GVK.Group, Name: name, UID: u.GetUID(), ExternalID: externalID},
			BrokerName: "acme", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID, Verb: v1alpha1.VerbProvision,
			Requester: v1alpha1.Requester{Username: "alice"}, SpecHash: journal.SpecHash(si.Spec), Generation: u.GetGeneration(),
		},
	}
	require.NoError(t, env.client.Create(ctx, op))
	op.Status = v1alpha1.BrokerOperationStatus{Phase: v1alpha1.PhaseCommitted, StartTime: &now, CompletionTime: &now, HTTPStatus: 201}
	require.NoError(t, env.client.Status().Update(ctx, op))
	r.broker.PutInstance(fakebroker.Instance{ID: externalID, ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID,
		Parameters: map[string]any{"storageGB": 10}})
	return u
}

// ready waits until the object's status says Ready and InSync.
func ready(t *testing.T, kind object.Kind, ns, name string) *v1alpha1.ServiceInstance {
	t.Helper()
	var si *v1alpha1.ServiceInstance
	require.Eventually(t, func() bool {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(kind.GVK)
		if env.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u) != nil {
			return false
		}
		var err error
		if si, err = object.ToInstance(u, kind); err != nil {
			return false
		}
		return meta.IsStatusConditionTrue(si.Status.Conditions, v1alpha1.ConditionReady) &&
			meta.IsStatusConditionTrue(si.Status.Conditions, v1alpha1.ConditionInSync)
	}, 30*time.Second, 100*time.Millisecond, "%s %s/%s is ready", kind.GVK.Kind, ns, name)
	return si
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
	kind, crd := installKind(t, r)
	require.Eventually(t, func() bool { return watching(r, kind) }, 30*time.Second, 50*time.Millisecond, "the kind is reconciled once its CRD is established")
	assert.True(t, informed(t, r, kind), "the kind's informer is in the cache")

	ns := namespace(t, "typed-lifecycle")
	provisioned(t, r, kind, ns, "db")
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

	kind, _ = installKind(t, r)
	require.Eventually(t, func() bool { return watching(r, kind) }, 30*time.Second, 50*time.Millisecond, "installed again, the kind is reconciled again")
	provisioned(t, r, kind, ns, "db-again")
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
	kind, crd := installKind(t, r)
	defer deleteKind(t, crd)
	require.Eventually(t, func() bool { return watching(r, kind) }, 30*time.Second, 50*time.Millisecond)
	ns := namespace(t, "typed-namespace")
	provisioned(t, r, kind, ns, "db")
	provisioned(t, r, kind, ns, "kept", v1alpha1.AnnotationReconcilePolicy, string(v1alpha1.PolicyDetachOnDelete))
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

// deleteKind deletes a kind's CRD and waits until it is gone.
func deleteKind(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, client.IgnoreNotFound(env.client.Delete(ctx, crd)))
	require.Eventually(t, func() bool {
		return apierrors.IsNotFound(env.client.Get(ctx, client.ObjectKeyFromObject(crd), &apiextensionsv1.CustomResourceDefinition{}))
	}, 60*time.Second, 100*time.Millisecond, "the CRD is gone")
}
