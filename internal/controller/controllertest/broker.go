package controllertest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
	"github.com/lockstep-dev/lockstep/internal/broker/osbclient"
	"github.com/lockstep-dev/lockstep/internal/catalog"
)

// Broker is a test broker over real HTTP, named "acme" in the returned
// cache of catalogs, which holds its default catalog as change edits it
// (nil: as it is).
func Broker(t testing.TB, change func(*osbapi.Catalog)) (*fakebroker.Broker, *catalog.Cache) {
	t.Helper()
	b := fakebroker.New(t)
	bc, err := osbclient.New(b.Config())
	require.NoError(t, err)
	cat := fakebroker.DefaultCatalog()
	if change != nil {
		change(&cat)
	}
	cache := catalog.NewCache(time.Hour)
	cache.Store(catalog.NewEntry("acme", bc, &cat, nil, time.Now()))
	return b, cache
}

// Scheme knows Kubernetes' own kinds and lockstep's.
func Scheme(t testing.TB) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	return scheme
}

// Cluster is a fake API server holding objs, with the journal's index and
// the status subresources of lockstep's kinds.
func Cluster(t testing.TB, objs ...client.Object) client.Client {
	t.Helper()
	return builder(Scheme(t)).WithObjects(objs...).
		WithStatusSubresource(&v1alpha1.ServiceInstance{}, &v1alpha1.ServiceBinding{}).Build()
}
