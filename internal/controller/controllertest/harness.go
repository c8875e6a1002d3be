package controllertest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
	"github.com/lockstep-dev/lockstep/internal/controller/brokered"
	"github.com/lockstep-dev/lockstep/internal/controller/resync"
	"github.com/lockstep-dev/lockstep/internal/journal"
)

// Interval is the resync interval of a Harness.
const Interval = time.Minute

// Harness is a reconciler of broker-backed objects over a fake API server
// and a test broker over real HTTP (see Broker), with a fake clock.
type Harness struct {
	Client client.Client
	Broker *fakebroker.Broker
	Clock  *clocktesting.FakeClock
	Events *record.FakeRecorder
	Leases *journal.Leases
	// Config is what the reconciler under test is made with.
	Config brokered.Config
	// R is the reconciler under test, made by the caller from Config.
	R reconcile.Reconciler
}

// NewHarness holds objs in the fake API server; change edits the catalog
// lockstep sees (nil: the broker's default one). The locks and records
// live next to their objects.
func NewHarness(t testing.TB, change func(*osbapi.Catalog), objs ...client.Object) *Harness {
	t.Helper()
	c := Cluster(t, objs...)
	b, cache := Broker(t, change)
	h := &Harness{Client: c, Broker: b, Clock: clocktesting.NewFakeClock(time.Now()), Events: record.NewFakeRecorder(100),
		Leases: &journal.Leases{Client: c, Duration: time.Minute}}
	h.Config = brokered.Config{Client: c, APIReader: c, Namespace: "lockstep-system", Catalogs: cache, Leases: h.Leases,
		Protocol: Protocol(c, ""), Recorder: h.Events, Limiter: &resync.Limiter{Concurrent: 1},
		ResyncInterval: Interval, Timeout: 5 * time.Second, Clock: h.Clock}
	return h
}

// Pass reconciles the object key names once.
func (h *Harness) Pass(t testing.TB, key types.NamespacedName) reconcile.Result {
	t.Helper()
	res, err := h.R.Reconcile(context.Background(), reconcile.Request{NamespacedName: key})
	require.NoError(t, err)
	return res
}

// Resync runs a first pass, which schedules the object, and a second one
// interval later, which fetches it; into obj it reads the object as the
// first pass left it.
func (h *Harness) Resync(t testing.TB, key types.NamespacedName, obj client.Object) reconcile.Result {
	t.Helper()
	h.Pass(t, key)
	require.NoError(t, h.Client.Get(context.Background(), key, obj))
	h.Clock.Step(Interval)
	return h.Pass(t, key)
}

// AssertCondition asserts that conds hold a condition of type typ with
// status and reason, whose message contains each of msgs; it returns the
// condition (nil when there is none).
func AssertCondition(t testing.TB, conds []metav1.Condition, typ string, status metav1.ConditionStatus, reason string, msgs ...string) *metav1.Condition {
	t.Helper()
	c := meta.FindStatusCondition(conds, typ)
	if !assert.NotNil(t, c, "condition %s", typ) {
		return nil
	}
	assert.Equal(t, status, c.Status, "%s status", typ)
	assert.Equal(t, reason, c.Reason, "%s reason", typ)
	for _, m := range msgs {
		assert.Contains(t, c.Message, m, "%s message", typ)
	}
	return c
}
