package conformance

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/bundle"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/store"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/store/etcdstore"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/store/etcdstore/etcdtest"
)

func openEtcd(t *testing.T, e *etcdtest.Etcd, prefix string) store.Store {
	t.Helper()
	st, err := etcdstore.Open(context.Background(), etcdstore.Config{Endpoints: []string{e.Endpoint}, Prefix: prefix})
	require.NoError(t, err)
	return st
}

// TestEtcdStore runs the main flows on the etcd store.
func TestEtcdStore(t *testing.T) {
	e := etcdtest.Start(t)
	h := newHarness(t, async, withStore(openEtcd(t, e, "/conformance/"+uuid.NewString()+"/")))
	h.provision("i1", map[string]any{"size": 1, "region": "eu"})
	requireStatus(t, http.StatusOK, h.do("PUT", instPath("i1"), quick(map[string]any{"size": 1, "region": "eu"})))
	requireStatus(t, http.StatusConflict, h.do("PUT", instPath("i1"), quick(map[string]any{"size": 2})))

	release := h.exec.hold(t, bundle.Bind, "i1", "b1")
	r := h.do("PUT", bindPath("i1", "b1")+"?accepts_incomplete=true", quickBind(nil))
	requireStatus(t, http.StatusAccepted, r)
	op := r.str("operation")
	r = h.do("PUT", bindPath("i1", "b1")+"?accepts_incomplete=true", quickBind(nil))
	requireStatus(t, http.StatusAccepted, r)
	assert.Equal(t, op, r.str("operation"))
	requireStatus(t, http.StatusNotFound, h.do("GET", bindPath("i1", "b1"), nil))
	r = h.do("PATCH", instPath("i1")+"?accepts_incomplete=true", map[string]any{"service_id": "svc-quick"})
	requireStatus(t, http.StatusUnprocessableEntity, r)
	assert.Equal(t, "ConcurrencyError", r.str("error"))
	release()
	h.waitLastOperation(bindPath("i1", "b1"), "succeeded")
	requireStatus(t, http.StatusOK, h.do("PUT", bindPath("i1", "b1"), quickBind(nil)))
	requireStatus(t, http.StatusOK, h.do("DELETE", bindPath("i1", "b1")+"?"+quickQuery, nil))
	requireStatus(t, http.StatusOK, h.do("DELETE", instPath("i1")+"?"+quickQuery, nil))
	h.waitGone(instPath("i1"))
}

// TestEtcdReplicas runs two brokers on one etcd: they share instances and
// locks, and one takes over the jobs of the other when it stops.
func TestEtcdReplicas(t *testing.T) {
	ctx := context.Background()
	e := etcdtest.Start(t)
	prefix := "/replicas/" + uuid.NewString() + "/"
	a := newHarness(t, async, withStore(openEtcd(t, e, prefix)))
	b := newHarness(t, async, withStore(openEtcd(t, e, prefix)), withConfig(func(c *embedded.Config) {
		c.RunnerTimeout = time.Second
	}))
	require.NotEqual(t, a.broker.RunnerID(), b.broker.RunnerID())

	a.provision("i1", map[string]any{"size": 1})
	requireStatus(t, http.StatusOK, b.do("GET", instPath("i1"), nil), "replica b sees what replica a did")

	a.exec.hold(t, bundle.Update, "i1", "")
	body := map[string]any{"service_id": "svc-quick", "parameters": map[string]any{"size": 2}}
	r := a.do("PATCH", instPath("i1")+"?accepts_incomplete=true", body)
	requireStatus(t, http.StatusAccepted, r)
	op := r.str("operation")
	a.exec.waitStarted(t, bundle.Update, "i1", "")

	r = b.do("PATCH", instPath("i1")+"?accepts_incomplete=true", body)
	requireStatus(t, http.StatusAccepted, r)
	assert.Equal(t, op, r.str("operation"), "an identical repeat on the other replica follows the same job")
	r = b.do("PATCH", instPath("i1")+"?accepts_incomplete=true", map[string]any{"service_id": "svc-quick", "parameters": map[string]any{"size": 3}})
	requireStatus(t, http.StatusUnprocessableEntity, r)
	assert.Equal(t, "ConcurrencyError", r.str("error"), "one job per instance across replicas")

	// Replica a is alive (its heartbeat is fresh): b leaves its job alone.
	require.NoError(t, a.broker.Heartbeat(ctx))
	failed, err := b.broker.Recover(ctx)
	require.NoError(t, err)
	assert.Empty(t, failed)

	// Replica a stops beating (its loops never ran); once its heartbeat is
	// older than b's runner timeout, b fails a's job as an orphan.
	require.Eventually(t, func() bool {
		failed, err := b.broker.Recover(ctx)
		return err == nil && len(failed) == 1 && failed[0] == op
	}, 10*time.Second, 20*time.Millisecond)
	lo := b.do("GET", instPath("i1")+"/last_operation?operation="+op, nil)
	assert.Equal(t, "failed", lo.str("state"))
	assert.Contains(t, lo.str("description"), "(runner "+a.broker.RunnerID()+") stopped before it finished")
	requireStatus(t, http.StatusOK, b.do("PATCH", instPath("i1"), map[string]any{"service_id": "svc-quick", "parameters": map[string]any{"size": 3}}))
}
