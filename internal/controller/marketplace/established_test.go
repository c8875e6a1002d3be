package marketplace

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/catalog"
)

// Each offering says its kind is served as soon as the API server
// establishes the kind's CRD, kind by kind, with what the broker's pass
// would write: the pass after finds nothing to write. A CRD not
// established, or applied from another rendering than the kind's now, is
// left to the pass.
func TestTypedKindEstablishedKindByKind(t *testing.T) {
	h := newHarness(t)
	h.activate("acme", activation("", "*"))
	cat := typedCatalog()
	h.sync(cat)
	const pg, db = "postgresqldbs.services.lockstep.dev", "dbs.services.lockstep.dev"

	assert.Equal(t, 0, h.reconcileEstablished(pg), "not established")
	notYet := h.crd(pg)
	h.establish(pg)
	assert.True(t, becameEstablished(notYet, h.crd(pg)))
	assert.False(t, becameEstablished(h.crd(pg), h.crd(pg)))
	assert.Equal(t, 1, h.reconcileEstablished(pg), "its offering's status")
	assert.Equal(t, "True Established established", ready(h.offering("acme.postgresql-db")))
	assert.Contains(t, meta.FindStatusCondition(h.offering("acme.postgresql-db").Status.Conditions, v1alpha1.ConditionTypedKindReady).Message,
		"status.typedKind.dropped", "the message the pass writes")
	assert.Equal(t, "False Applying", ready(h.offering("acme.db")))
	assert.Equal(t, 0, h.sync(cat), "the pass finds it written")

	h.establish(db)
	cat.Services[0].Description = "changed"
	h.catalogs.Store(catalog.NewEntry("acme", nil, &cat, nil, time.Now()))
	assert.Equal(t, 0, h.reconcileEstablished(db), "the service changed since the CRD was applied: the pass applies it again")
	assert.Equal(t, "False Applying", ready(h.offering("acme.db")))
}

// reconcileEstablished runs the reconcile of the established CRD name and
// returns how many writes it made.
func (h *harness) reconcileEstablished(name string) int {
	h.t.Helper()
	before := h.writes
	_, err := h.r.reconcileEstablished(context.Background(), reconcile.Request{NamespacedName: client.ObjectKey{Name: name}})
	require.NoError(h.t, err)
	return h.writes - before
}
