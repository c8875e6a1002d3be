package servicebroker

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
	"github.com/lockstep-dev/lockstep/internal/catalog"
)

// newIDs is the default catalog of a broker restarted with new ids for
// every service and plan, under the same names.
func newIDs() osbapi.Catalog {
	cat := fakebroker.DefaultCatalog()
	for i := range cat.Services {
		cat.Services[i].ID += "-v2"
		for j := range cat.Services[i].Plans {
			cat.Services[i].Plans[j].ID += "-v2"
		}
	}
	return cat
}

// A broker restarted with new ids: admission's refresh (the cache's
// fetcher) finds them, asks every replica to read the catalog again (the
// refresh annotation), and the reconciler that does removes the
// annotation. The plans keep their names: none is "removed".
func TestRefreshFollowsABrokerRestartedWithNewIDs(t *testing.T) {
	b, r, c := loadedBroker(t, "small")
	require.Equal(t, 1, b.Count(fakebroker.OpCatalog))

	require.NoError(t, b.SetCatalog(newIDs()))
	e, err := r.Cache.Refresh(context.Background(), "acme")
	require.NoError(t, err)
	small, err := e.Find("db", "small")
	require.NoError(t, err)
	assert.Equal(t, fakebroker.PlanSmallID+"-v2", small.Plan.ID, "the next request sends the new id")
	assert.False(t, small.Removed, "the plan under its new id is the same plan, not a removed one")

	var asked v1alpha1.ServiceBroker
	require.NoError(t, c.Get(context.Background(), client.ObjectKey{Name: "acme"}, &asked))
	assert.Contains(t, asked.Annotations, v1alpha1.AnnotationRefresh, "every replica is asked to read the catalog again")

	got, _, err := reconcile(t, r, c, "acme")
	require.NoError(t, err)
	assert.NotContains(t, got.Annotations, v1alpha1.AnnotationRefresh, "removed once read again: the same command asks again next time")
	for _, s := range got.Status.Services {
		for _, p := range s.Plans {
			assert.False(t, p.RemovedFromCatalog, "plan %s", p.Name)
			assert.Contains(t, p.ID, "-v2", "the status shows the new ids")
		}
	}

	// Refreshing an unchanged catalog asks nobody.
	current, _ := r.Cache.Get("acme")
	r.Cache = catalog.NewCache(0)
	r.Cache.SetFetcher(r.Fetch)
	r.Cache.Store(current)
	_, err = r.Cache.Refresh(context.Background(), "acme")
	require.NoError(t, err)
	require.NoError(t, c.Get(context.Background(), client.ObjectKey{Name: "acme"}, &asked))
	assert.NotContains(t, asked.Annotations, v1alpha1.AnnotationRefresh)
}

// The catalog is read when a ServiceBroker appears, when its spec changes
// and when its refresh annotation is set; never for a write of its status
// (which every catalog read makes: that would read it twice per relist)
// nor for the removal of the annotation.
func TestReconciledOnlyForWhatAsksForACatalog(t *testing.T) {
	base := func() *v1alpha1.ServiceBroker {
		return &v1alpha1.ServiceBroker{ObjectMeta: metav1.ObjectMeta{Name: "acme", Generation: 1}, Spec: v1alpha1.ServiceBrokerSpec{URL: "http://x"}}
	}
	tests := []struct {
		name   string
		change func(sb *v1alpha1.ServiceBroker)
		want   bool
	}{
		{"its status written", func(sb *v1alpha1.ServiceBroker) {
			now := metav1.Now()
			sb.Status.LastCatalogSync = &now
		}, false},
		{"its spec changed", func(sb *v1alpha1.ServiceBroker) { sb.Generation = 2 }, true},
		{"refresh asked", func(sb *v1alpha1.ServiceBroker) {
			sb.Annotations = map[string]string{v1alpha1.AnnotationRefresh: "now"}
		}, true},
		{"another annotation", func(sb *v1alpha1.ServiceBroker) { sb.Annotations = map[string]string{"team": "x"} }, false},
	}
	p := refreshAndSpecChanges()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old, cur := base(), base()
			tt.change(cur)
			assert.Equal(t, tt.want, p.Update(event.UpdateEvent{ObjectOld: old, ObjectNew: cur}))
		})
	}
	t.Run("refresh annotation removed", func(t *testing.T) {
		old, cur := base(), base()
		old.Annotations = map[string]string{v1alpha1.AnnotationRefresh: "now"}
		assert.False(t, p.Update(event.UpdateEvent{ObjectOld: old, ObjectNew: cur}))
	})
	t.Run("created", func(t *testing.T) {
		assert.True(t, p.Create(event.CreateEvent{Object: base()}))
	})
}
