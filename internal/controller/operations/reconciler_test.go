package operations

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
	"github.com/lockstep-dev/lockstep/internal/broker/osbclient"
	"github.com/lockstep-dev/lockstep/internal/catalog"
	"github.com/lockstep-dev/lockstep/internal/controller/controllertest"
	"github.com/lockstep-dev/lockstep/internal/journal"
	"github.com/lockstep-dev/lockstep/internal/typed/render"
)

type opsHarness struct {
	r      *Reconciler
	client client.Client
	broker *fakebroker.Broker
	clock  *clocktesting.FakeClock
}

func newOpsHarness(t *testing.T, objects ...client.Object) *opsHarness {
	t.Helper()
	scheme := runtime.NewScheme()
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	require.NoError(t, coordinationv1.AddToScheme(scheme))
	require.NoError(t, corev1.AddToScheme(scheme))
	require.NoError(t, apiextensionsv1.AddToScheme(scheme))
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objects...).
		WithStatusSubresource(&v1alpha1.ServiceInstance{}).
		WithIndex(&v1alpha1.BrokerOperation{}, journal.TargetUIDIndex, journal.TargetUID).Build()
	b := fakebroker.New(t)
	bc, err := osbclient.New(b.Config())
	require.NoError(t, err)
	cat := fakebroker.DefaultCatalog()
	cache := catalog.NewCache(time.Hour)
	cache.Store(catalog.NewEntry("acme", bc, &cat, nil, time.Now()))
	h := &opsHarness{client: c, broker: b, clock: clocktesting.NewFakeClock(time.Now())}
	h.r = &Reconciler{
		Client: c, Catalogs: cache, Journal: &journal.Journal{Client: c, Clock: h.clock},
		Leases:   &journal.Leases{Client: c, Duration: time.Minute, Clock: h.clock},
		Protocol: controllertest.Protocol(c, ""),
		Poll:     time.Millisecond, Grace: 5 * time.Second, PendingTimeout: 30 * time.Second, Keep: 2, Timeout: 5 * time.Second, Clock: h.clock,
	}
	return h
}

func (h *opsHarness) reconcile(t *testing.T, name string) ctrl.Result {
	t.Helper()
	res, err := h.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "team", Name: name}})
	require.NoError(t, err)
	return res
}

func (h *opsHarness) phase(t *testing.T, name string) v1alpha1.OperationPhase {
	t.Helper()
	var op v1alpha1.BrokerOperation
	require.NoError(t, h.client.Get(context.Background(), client.ObjectKey{Namespace: "team", Name: name}, &op))
	return op.Status.Phase
}

func opRecord(name string, verb v1alpha1.Verb, phase v1alpha1.OperationPhase, spec v1alpha1.ServiceInstanceSpec, created time.Time) *v1alpha1.BrokerOperation {
	done := metav1.NewTime(created)
	return &v1alpha1.BrokerOperation{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team", CreationTimestamp: metav1.NewTime(created),
			Labels: map[string]string{journal.LabelTargetUID: "uid-1"}},
		Spec: v1alpha1.BrokerOperationSpec{
			Target:     v1alpha1.OperationTarget{Kind: "ServiceInstance", Name: "db", UID: "uid-1", ExternalID: "ext-1"},
			BrokerName: "acme", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID,
			Verb: verb, Requester: v1alpha1.Requester{Username: "alice"}, SpecHash: journal.SpecHash(spec), Generation: 1,
		},
		Status: v1alpha1.BrokerOperationStatus{Phase: phase, StartTime: &done, CompletionTime: &done},
	}
}

// TestOperationsCommitReleasesTheLock: a success the API server persisted
// is committed and its lock released; the object's status is its own
// controller's to write.
func TestOperationsCommitReleasesTheLock(t *testing.T) {
	spec := v1alpha1.ServiceInstanceSpec{BrokerName: "acme", ServiceName: "db", PlanName: "small", ExternalID: "ext-1"}
	si := &v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "team", UID: "uid-1", Generation: 1}, Spec: spec}
	h := newOpsHarness(t, si, opRecord("op", v1alpha1.VerbProvision, v1alpha1.PhaseSucceeded, spec, time.Now()))
	key := journal.Key{Kind: "ServiceInstance", Namespace: "team", Name: "db", ExternalID: "ext-1"}
	_, ok, err := h.r.Leases.Acquire(context.Background(), key, &journal.Operation{Record: "op", Started: h.clock.Now()})
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, h.client.Get(context.Background(), client.ObjectKeyFromObject(si), si))
	before := si.ResourceVersion

	h.reconcile(t, "op")
	assert.Equal(t, v1alpha1.PhaseCommitted, h.phase(t, "op"))
	require.NoError(t, h.client.Get(context.Background(), client.ObjectKeyFromObject(si), si))
	assert.Equal(t, before, si.ResourceVersion, "the operations reconciler never writes the object")
	holder, err := h.r.Leases.Holder(context.Background(), key)
	require.NoError(t, err)
	assert.Nil(t, holder, "the lock is released")
}

func TestOperationsOrphanedProvisionIsDeprovisioned(t *testing.T) {
	spec := v1alpha1.ServiceInstanceSpec{ServiceName: "db", PlanName: "small", ExternalID: "ext-1"}
	h := newOpsHarness(t, opRecord("op", v1alpha1.VerbProvision, v1alpha1.PhaseSucceeded, spec, time.Now()))
	h.broker.PutInstance(fakebroker.Instance{ID: "ext-1", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID})

	res := h.reconcile(t, "op")
	assert.Equal(t, v1alpha1.PhaseSucceeded, h.phase(t, "op"), "within the grace period the object may still persist")
	assert.Positive(t, res.RequeueAfter)

	h.clock.Step(6 * time.Second)
	h.reconcile(t, "op")
	assert.Equal(t, v1alpha1.PhaseOrphaned, h.phase(t, "op"))
	h.reconcile(t, "op")
	assert.Equal(t, v1alpha1.PhaseCompensated, h.phase(t, "op"))
	_, held := h.broker.Instance("ext-1")
	assert.False(t, held, "the orphan is deprovisioned")
}

func TestOperationsPruneKeepsTheLastRecords(t *testing.T) {
	spec := v1alpha1.ServiceInstanceSpec{ServiceName: "db", PlanName: "small", ExternalID: "ext-1"}
	start := time.Now().Add(-time.Hour)
	var objects []client.Object
	for i := 0; i < 4; i++ {
		objects = append(objects, opRecord(fmt.Sprintf("op-%d", i), v1alpha1.VerbUpdate, v1alpha1.PhaseCommitted, spec, start.Add(time.Duration(i)*time.Minute)))
	}
	// Another object's oldest record is not this object's to prune.
	other := opRecord("other", v1alpha1.VerbUpdate, v1alpha1.PhaseCommitted, spec, start.Add(-time.Minute))
	other.Spec.Target.UID, other.Labels[journal.LabelTargetUID] = "uid-2", "uid-2"
	h := newOpsHarness(t, append(objects, other)...)
	h.reconcile(t, "op-3")
	var ops v1alpha1.BrokerOperationList
	require.NoError(t, h.client.List(context.Background(), &ops))
	var names []string
	for _, op := range ops.Items {
		names = append(names, op.Name)
	}
	assert.ElementsMatch(t, []string{"op-2", "op-3", "other"}, names)
}

func TestOperationsPendingTooLongIsSettled(t *testing.T) {
	spec := v1alpha1.ServiceInstanceSpec{ServiceName: "db", PlanName: "small", ExternalID: "ext-1"}
	other := v1alpha1.ServiceInstanceSpec{ServiceName: "db", PlanName: "large", ExternalID: "ext-1"}
	instance := func(spec v1alpha1.ServiceInstanceSpec, generation int64, deleting bool) *v1alpha1.ServiceInstance {
		si := &v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "team", UID: "uid-1", Generation: generation}, Spec: spec}
		if deleting {
			si.DeletionTimestamp = &metav1.Time{Time: time.Now()}
			si.Finalizers = []string{"test.lockstep.dev/hold"}
		}
		return si
	}
	const deleted v1alpha1.OperationPhase = "(deleted)"
	tests := []struct {
		name   string
		verb   v1alpha1.Verb
		phase  v1alpha1.OperationPhase // as written: "" is how Begin leaves it
		lock   string                  // the record the object's lock names; "" no lock
		target *v1alpha1.ServiceInstance
		want   v1alpha1.OperationPhase
		why    string
	}{
		{"provision never persisted", v1alpha1.VerbProvision, v1alpha1.PhasePending, "op", nil, v1alpha1.PhaseOrphaned,
			"a provision whose answer was never recorded is mitigated"},
		{"provision persisted, no phase", v1alpha1.VerbProvision, "", "op", instance(spec, 1, false), v1alpha1.PhaseSucceeded,
			"the object exists with the recorded uid: the broker carried it out"},
		{"update persisted as recorded", v1alpha1.VerbUpdate, "", "op", instance(spec, 1, false), v1alpha1.PhaseSucceeded,
			"the recorded spec at the recorded generation: allowed, so carried out"},
		{"update not persisted", v1alpha1.VerbUpdate, "", "op", instance(other, 1, false), v1alpha1.PhaseInProgress,
			"another spec at the recorded generation: the outcome is unknown, and followed"},
		{"update never persisted", v1alpha1.VerbUpdate, "", "op", instance(other, 0, false), v1alpha1.PhaseOrphaned,
			"the object is still at the generation before the update: the persisted spec is applied again"},
		{"same spec at a later generation", v1alpha1.VerbUpdate, "", "op", instance(spec, 3, false), v1alpha1.PhaseInProgress,
			"the spec came back by a later change: this one's outcome is unknown, and followed"},
		{"deprovision carried out", v1alpha1.VerbDeprovision, "", "op", instance(spec, 1, true), v1alpha1.PhaseSucceeded,
			"the object is being deleted: the delete was allowed"},
		{"deprovision not carried out", v1alpha1.VerbDeprovision, "", "op", instance(spec, 1, false), v1alpha1.PhaseInProgress,
			"the object is not being deleted: the outcome is unknown, and followed until the broker tells"},
		{"update still running at the broker", v1alpha1.VerbUpdate, "", "op", instance(other, 1, false), v1alpha1.PhaseInProgress,
			"the broker says in progress: followed, not settled"},
		{"deprovision the broker finished", v1alpha1.VerbDeprovision, "", "op", instance(spec, 1, false), v1alpha1.PhaseInProgress,
			"the broker no longer knows the instance (410): followed, so that the delete is finished"},
		{"provision that lost the lock", v1alpha1.VerbProvision, "", "winner", nil, deleted,
			"the lock went to another operation: the broker was never called, nothing to mitigate"},
		{"provision that lost the lock, winner persisted", v1alpha1.VerbProvision, "", "winner", instance(spec, 1, false), deleted,
			"the object the winner created is not this record's doing"},
		{"update without a lock", v1alpha1.VerbUpdate, "", "", instance(other, 1, false), deleted,
			"no lock names the record: it never took the lock, so never reached the broker"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			op := opRecord("op", tt.verb, tt.phase, spec, time.Now().Add(-time.Minute))
			op.Status.CompletionTime = nil
			objects := []client.Object{op}
			if tt.target != nil {
				objects = append(objects, tt.target)
			}
			h := newOpsHarness(t, objects...)
			switch tt.name {
			case "update still running at the broker":
				h.broker.PutInstance(fakebroker.Instance{ID: "ext-1", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID})
				h.broker.Always(fakebroker.OpInstanceLastOperation, fakebroker.Respond{Status: 200, Body: `{"state":"in progress"}`})
			case "deprovision the broker finished":
				// the broker holds nothing: last_operation answers 410 Gone
			default:
				h.broker.PutInstance(fakebroker.Instance{ID: "ext-1", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID})
			}
			key := journal.Key{Kind: "ServiceInstance", Namespace: "team", Name: "db", ExternalID: "ext-1"}
			if tt.lock != "" {
				_, ok, err := h.r.Leases.Acquire(context.Background(), key, &journal.Operation{Record: tt.lock, Started: h.clock.Now()})
				require.NoError(t, err)
				require.True(t, ok)
			}
			h.reconcile(t, "op")
			if tt.want != deleted {
				assert.Equal(t, tt.want, h.phase(t, "op"), tt.why)
				return
			}
			err := h.client.Get(context.Background(), client.ObjectKey{Namespace: "team", Name: "op"}, &v1alpha1.BrokerOperation{})
			assert.True(t, apierrors.IsNotFound(err), tt.why)
			assert.Zero(t, h.reconcile(t, "op"), "nothing left to reconcile")
			assert.Empty(t, h.broker.Calls(), "the broker is not called for a record that never took the lock")
			_, held := h.broker.Instance("ext-1")
			assert.True(t, held, "whatever the broker holds under the external id stays")
			held2, err := h.r.Leases.HeldBy(context.Background(), key)
			require.NoError(t, err)
			assert.Equal(t, tt.lock, held2, "another operation's lock is left alone")
		})
	}
}

// TestOperationsFollowKeepsAnUnknownOutcomeInProgress: when the broker
// cannot tell how an operation ended (connection cut, 5xx, malformed
// answer), the operation is not failed: it stays InProgress holding its
// lock, its record tells the object InSync=Unknown, and the broker is
// asked again, waiting twice as long each time.
func TestOperationsFollowKeepsAnUnknownOutcomeInProgress(t *testing.T) {
	for _, tc := range []struct {
		name  string
		poll  fakebroker.Respond
		cause string
	}{
		{name: "connection cut", poll: fakebroker.Respond{CloseConnection: true}, cause: "answer was cut off"},
		{name: "5xx", poll: fakebroker.Respond{Status: 503, Description: "maintenance"}, cause: "maintenance"},
		{name: "malformed answer", poll: fakebroker.Respond{Malformed: true}, cause: "not"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := v1alpha1.ServiceInstanceSpec{BrokerName: "acme", ServiceName: "db", PlanName: "small", ExternalID: "ext-1"}
			si := &v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "team", UID: "uid-1", Generation: 1}, Spec: spec}
			start := time.Now().Truncate(time.Second) // timestamps are kept to the second
			rec := opRecord("op", v1alpha1.VerbUpdate, v1alpha1.PhaseInProgress, spec, start)
			rec.Status.CompletionTime = nil
			rec.Status.HTTPStatus = http.StatusAccepted // the broker accepted it, without an operation key
			h := newOpsHarness(t, si, rec)
			h.broker.PutInstance(fakebroker.Instance{ID: "ext-1", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID})
			h.broker.Always(fakebroker.OpInstanceLastOperation, tc.poll)
			key := journal.Key{Kind: "ServiceInstance", Namespace: "team", Name: "db", ExternalID: "ext-1"}
			_, ok, err := h.r.Leases.Acquire(context.Background(), key, &journal.Operation{Record: "op", Started: start})
			require.NoError(t, err)
			require.True(t, ok)

			h.clock.SetTime(start.Add(50 * time.Second)) // past the lock's duration since it was taken
			res := h.reconcile(t, "op")
			assert.Equal(t, v1alpha1.PhaseInProgress, h.phase(t, "op"), "an unknown outcome is not a failure")
			assert.Equal(t, time.Millisecond, res.RequeueAfter, "asked again after the poll interval")
			res = h.reconcile(t, "op")
			assert.Equal(t, 2*time.Millisecond, res.RequeueAfter, "then twice as late")
			var op v1alpha1.BrokerOperation
			require.NoError(t, h.client.Get(context.Background(), client.ObjectKey{Namespace: "team", Name: "op"}, &op))
			c := op.Status.TargetInSync
			require.NotNil(t, c, "the record tells the instance's controller")
			assert.Equal(t, metav1.ConditionUnknown, c.Status)
			assert.Equal(t, "OutcomeUnknown", c.Reason)
			assert.Contains(t, c.Message, tc.cause)

			h.clock.SetTime(start.Add(100 * time.Second)) // the renewal keeps the lock alive
			holder, err := h.r.Leases.Holder(context.Background(), key)
			require.NoError(t, err)
			require.NotNil(t, holder, "the operation keeps the object's lock")

			h.broker.Reset() // the broker answers again: the update succeeded
			h.reconcile(t, "op")
			assert.Equal(t, v1alpha1.PhaseSucceeded, h.phase(t, "op"))
		})
	}
}

// TestOperationsFollowAPlanChangeWithThePlanFromBefore: the specification
// asks last_operation about an update with the plan from before it.
func TestOperationsFollowAPlanChangeWithThePlanFromBefore(t *testing.T) {
	spec := v1alpha1.ServiceInstanceSpec{BrokerName: "acme", ServiceName: "db", PlanName: "large", ExternalID: "ext-1"}
	si := &v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "team", UID: "uid-1", Generation: 1}, Spec: spec}
	rec := opRecord("op", v1alpha1.VerbUpdate, v1alpha1.PhaseInProgress, spec, time.Now())
	rec.Spec.PlanID, rec.Spec.PreviousPlanID = fakebroker.PlanLargeID, fakebroker.PlanSmallID
	rec.Status.CompletionTime = nil
	rec.Status.HTTPStatus = http.StatusAccepted
	h := newOpsHarness(t, si, rec)
	h.broker.PutInstance(fakebroker.Instance{ID: "ext-1", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanLargeID})
	key := journal.Key{Kind: "ServiceInstance", Namespace: "team", Name: "db", ExternalID: "ext-1"}
	_, ok, err := h.r.Leases.Acquire(context.Background(), key, &journal.Operation{Record: "op", Started: h.clock.Now()})
	require.NoError(t, err)
	require.True(t, ok)

	h.reconcile(t, "op")
	assert.Equal(t, v1alpha1.PhaseSucceeded, h.phase(t, "op"))
	poll, ok := h.broker.LastCall(fakebroker.OpInstanceLastOperation)
	require.True(t, ok, "the reconciler asked the broker")
	assert.Equal(t, fakebroker.PlanSmallID, poll.Query.Get("plan_id"))
}

// TestOperationsExpireTheRecordsOfObjectsThatAreGone: the final records of
// an object that no longer exists are removed once older than the
// retention; those of an object that exists stay (Keep bounds them).
func TestOperationsExpireTheRecordsOfObjectsThatAreGone(t *testing.T) {
	spec := v1alpha1.ServiceInstanceSpec{BrokerName: "acme", ServiceName: "db", PlanName: "small", ExternalID: "ext-1"}
	for _, tc := range []struct {
		name      string
		exists    bool
		deleting  bool
		wantLeft  []string
		wantAgain time.Duration // when the young one is looked at again
	}{
		{name: "object gone: the expired record goes, the young one waits", wantLeft: []string{"young"}, wantAgain: 23 * time.Hour},
		{name: "object still there: nothing expires", exists: true, wantLeft: []string{"old", "young"}},
		{name: "object being deleted: nothing expires yet, looked at again when the young one is due",
			exists: true, deleting: true, wantLeft: []string{"old", "young"}, wantAgain: 23 * time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Now()
			objects := []client.Object{
				opRecord("old", v1alpha1.VerbProvision, v1alpha1.PhaseCommitted, spec, now.Add(-48*time.Hour)),
				opRecord("young", v1alpha1.VerbDeprovision, v1alpha1.PhaseCommitted, spec, now.Add(-time.Hour)),
			}
			if tc.exists {
				si := &v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "team", UID: "uid-1"}, Spec: spec}
				if tc.deleting {
					si.Finalizers = []string{v1alpha1.Finalizer}
					si.DeletionTimestamp = &metav1.Time{Time: now}
				}
				objects = append(objects, si)
			}
			h := newOpsHarness(t, objects...)
			h.r.Retention = 24 * time.Hour
			res := h.reconcile(t, "young")

			var ops v1alpha1.BrokerOperationList
			require.NoError(t, h.client.List(context.Background(), &ops))
			var left []string
			for _, op := range ops.Items {
				left = append(left, op.Name)
			}
			assert.ElementsMatch(t, tc.wantLeft, left)
			assert.InDelta(t, float64(tc.wantAgain), float64(res.RequeueAfter), float64(time.Minute), "looked at again when the young one expires")
		})
	}
}

// TestOperationsOrphanMitigationBacksOff: a broker answering 422
// ConcurrencyError (still busy with the bind being undone) is asked again
// later each time, never in a burst: each pass sends one unbind and waits
// twice as long as the one before, up to two minutes.
func TestOperationsOrphanMitigationBacksOff(t *testing.T) {
	spec := v1alpha1.ServiceInstanceSpec{ServiceName: "db", PlanName: "small", ExternalID: "ext-1"}
	rec := opRecord("op", v1alpha1.VerbBind, v1alpha1.PhaseOrphaned, spec, time.Now())
	rec.Spec.Target = v1alpha1.OperationTarget{Kind: v1alpha1.KindServiceBinding, Name: "creds", UID: "uid-b", ExternalID: "bind-1", InstanceID: "ext-1"}
	h := newOpsHarness(t, rec)
	h.broker.PutInstance(fakebroker.Instance{ID: "ext-1", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID})
	h.broker.PutBinding(fakebroker.Binding{InstanceID: "ext-1", ID: "bind-1", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID})
	h.broker.Always(fakebroker.OpUnbind, fakebroker.Respond{Status: http.StatusUnprocessableEntity, Error: "ConcurrencyError", Description: "binding in progress"})

	var waits []time.Duration
	for i := range 20 {
		waits = append(waits, h.reconcile(t, "op").RequeueAfter)
		assert.Equal(t, i+1, h.broker.Count(fakebroker.OpUnbind), "one unbind per pass")
	}
	assert.Equal(t, []time.Duration{time.Millisecond, 2 * time.Millisecond, 4 * time.Millisecond, 8 * time.Millisecond}, waits[:4])
	assert.Equal(t, 2*time.Minute, waits[19], "at most two minutes")
	assert.Equal(t, v1alpha1.PhaseOrphaned, h.phase(t, "op"))

	h.broker.Reset()
	assert.Zero(t, h.reconcile(t, "op").RequeueAfter)
	assert.Equal(t, v1alpha1.PhaseCompensated, h.phase(t, "op"))
	_, held := h.broker.Binding("ext-1", "bind-1")
	assert.False(t, held)
}

// TestOperationsCutShortIsFollowedToItsEnd: a deprovision whose replica
// stopped before the broker's answer was recorded, with the object still
// there and not being deleted, and a broker that does not answer the
// first question about it: the outcome is unknown, so the operation is
// followed (InProgress, InSync Unknown), never settled Failed; once the
// broker tells, it ends the way the broker says.
func TestOperationsCutShortIsFollowedToItsEnd(t *testing.T) {
	for _, tc := range []struct {
		name       string
		brokerHeld bool // the broker still holds the instance
		want       v1alpha1.OperationPhase
		wantGone   bool // the object is deleted
	}{
		{name: "the broker carried the deprovision out", want: v1alpha1.PhaseSucceeded, wantGone: true},
		{name: "the broker never got it", brokerHeld: true, want: v1alpha1.PhaseFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := v1alpha1.ServiceInstanceSpec{BrokerName: "acme", ServiceName: "db", PlanName: "small", ExternalID: "ext-1"}
			si := &v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "team", UID: "uid-1", Generation: 1}, Spec: spec}
			rec := opRecord("op", v1alpha1.VerbDeprovision, "", spec, time.Now().Add(-time.Minute))
			rec.Status.CompletionTime = nil
			h := newOpsHarness(t, si, rec)
			if tc.brokerHeld {
				h.broker.PutInstance(fakebroker.Instance{ID: "ext-1", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID})
			}
			h.broker.Script(fakebroker.OpInstanceLastOperation, fakebroker.Respond{Status: http.StatusServiceUnavailable, Description: "maintenance"})
			key := journal.Key{Kind: "ServiceInstance", Namespace: "team", Name: "db", ExternalID: "ext-1"}
			_, ok, err := h.r.Leases.Acquire(context.Background(), key, &journal.Operation{Record: "op", Started: h.clock.Now()})
			require.NoError(t, err)
			require.True(t, ok)
			h.clock.Step(2 * time.Minute) // the lock was not renewed since lockstep stopped

			h.reconcile(t, "op")
			var op v1alpha1.BrokerOperation
			require.NoError(t, h.client.Get(context.Background(), client.ObjectKey{Namespace: "team", Name: "op"}, &op))
			assert.Equal(t, v1alpha1.PhaseInProgress, op.Status.Phase, "an unknown outcome is followed, not failed")
			require.NotNil(t, op.Status.TargetInSync)
			assert.Equal(t, metav1.ConditionUnknown, op.Status.TargetInSync.Status)
			holder, err := h.r.Leases.Holder(context.Background(), key)
			require.NoError(t, err)
			require.NotNil(t, holder, "the operation keeps the object's lock while it is followed")
			assert.Equal(t, "op", holder.Record)

			h.reconcile(t, "op")
			assert.Equal(t, tc.want, h.phase(t, "op"))
			err = h.client.Get(context.Background(), client.ObjectKeyFromObject(si), &v1alpha1.ServiceInstance{})
			assert.Equal(t, tc.wantGone, apierrors.IsNotFound(err), "the object goes only when the broker deprovisioned it")
		})
	}
}

// TestOperationsRecordOfANamespaceGoneIsMovedAndFollowed: the namespace
// controller may remove a namespace and leave the records in it (after a
// kube-apiserver restart, before lockstep's kinds are served again); the
// API server then refuses every write of them. Such a record is moved to
// lockstep's namespace with its status, and followed there to its end:
// here a provision whose object never persisted, undone at the broker.
func TestOperationsRecordOfANamespaceGoneIsMovedAndFollowed(t *testing.T) {
	spec := v1alpha1.ServiceInstanceSpec{ServiceName: "db", PlanName: "small", ExternalID: "ext-1"}
	rec := opRecord("op", v1alpha1.VerbProvision, v1alpha1.PhaseSucceeded, spec, time.Now().Add(-time.Minute))
	rec.Spec.Target.Namespace = ""
	h := newOpsHarness(t, rec)
	h.broker.PutInstance(fakebroker.Instance{ID: "ext-1", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID})
	gone := func(obj client.Object) error {
		if _, ok := obj.(*v1alpha1.BrokerOperation); ok && obj.GetNamespace() == "team" {
			return apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "team")
		}
		return nil
	}
	c := interceptor.NewClient(h.client.(client.WithWatch), interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if err := gone(obj); err != nil {
				return err
			}
			return c.Create(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if err := gone(obj); err != nil {
				return err
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
	})
	h.r.Client = c
	h.r.Journal = &journal.Journal{Client: c, Namespace: "lockstep-system", Clock: h.clock}
	key := journal.Key{Kind: "ServiceInstance", Namespace: "team", Name: "db", ExternalID: "ext-1"}
	_, ok, err := h.r.Leases.Acquire(context.Background(), key, &journal.Operation{Record: "op", Started: h.clock.Now()})
	require.NoError(t, err)
	require.True(t, ok)
	h.clock.Step(time.Minute) // past the grace: the object never persisted

	h.reconcile(t, "op")
	err = h.client.Get(context.Background(), client.ObjectKey{Namespace: "team", Name: "op"}, &v1alpha1.BrokerOperation{})
	assert.True(t, apierrors.IsNotFound(err), "the record is gone from the namespace that is gone")
	moved := func() *v1alpha1.BrokerOperation {
		var op v1alpha1.BrokerOperation
		require.NoError(t, h.client.Get(context.Background(), client.ObjectKey{Namespace: "lockstep-system", Name: "op"}, &op), "moved to lockstep's namespace")
		return &op
	}
	assert.Equal(t, v1alpha1.PhaseSucceeded, moved().Status.Phase, "with its status")
	assert.Equal(t, "team", moved().Spec.Target.Namespace, "still about its object's namespace")

	for range 3 {
		_, err := h.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "lockstep-system", Name: "op"}})
		require.NoError(t, err)
	}
	assert.Equal(t, v1alpha1.PhaseCompensated, moved().Status.Phase)
	_, held := h.broker.Instance("ext-1")
	assert.False(t, held, "what the provision left at the broker is undone")
}

// TestOperationsOrphanedUpdateInANamespaceGone: an orphaned update is
// compensated by applying the persisted spec again; when that fails and
// the instance's namespace no longer exists (the namespace controller
// removed it while lockstep's kinds were not served), nobody can see or
// change the instance and what its spec refers to went with the
// namespace: there is nothing to re-apply, and the operation ends. While
// the namespace exists, the compensation is tried again.
func TestOperationsOrphanedUpdateInANamespaceGone(t *testing.T) {
	for _, tc := range []struct {
		name      string
		namespace bool // the instance's namespace exists
		want      v1alpha1.OperationPhase
	}{
		{name: "namespace gone", want: v1alpha1.PhaseCompensated},
		{name: "namespace still there", namespace: true, want: v1alpha1.PhaseOrphaned},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := v1alpha1.ServiceInstanceSpec{BrokerName: "acme", ServiceName: "db", PlanName: "small", ExternalID: "ext-1",
				ParametersFrom: []v1alpha1.ParametersFromSource{{SecretKeyRef: v1alpha1.SecretKeyReference{Name: "db-params", Key: "params"}}}}
			si := &v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "team", UID: "uid-1", Generation: 1}, Spec: spec}
			objects := []client.Object{si, opRecord("op", v1alpha1.VerbUpdate, v1alpha1.PhaseOrphaned, spec, time.Now())}
			if tc.namespace {
				objects = append(objects, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}})
			}
			h := newOpsHarness(t, objects...)
			h.r.Secrets = h.client // the Secret went with the namespace
			h.broker.PutInstance(fakebroker.Instance{ID: "ext-1", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID})

			h.reconcile(t, "op")
			assert.Equal(t, tc.want, h.phase(t, "op"))
			assert.Zero(t, h.broker.Count(fakebroker.OpUpdate), "nothing is sent without the Secret's parameters")
		})
	}
}

// TestOperationsOrphanedUpdateOfAnInstanceTheBrokerNoLongerHolds: an
// orphaned update is compensated by applying the persisted spec again;
// when the broker answers that it no longer holds the instance (a delete
// whose answer was lost carried it out), or refuses the update and answers
// 404 when its instance is read, there is nothing to re-apply: the
// operation ends, and its lock goes, instead of asking for ever. Resync
// reports the instance gone.
func TestOperationsOrphanedUpdateOfAnInstanceTheBrokerNoLongerHolds(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		held   bool // the broker still holds the instance (a read of it answers 200)
		want   v1alpha1.OperationPhase
	}{
		{name: "404", status: http.StatusNotFound, want: v1alpha1.PhaseCompensated},
		{name: "410", status: http.StatusGone, want: v1alpha1.PhaseCompensated},
		{name: "400, and a read of the instance answers 404", status: http.StatusBadRequest, want: v1alpha1.PhaseCompensated},
		{name: "another refusal of an instance the broker holds is tried again", status: http.StatusUnprocessableEntity, held: true, want: v1alpha1.PhaseOrphaned},
		{name: "400 of an instance the broker holds is tried again", status: http.StatusBadRequest, held: true, want: v1alpha1.PhaseOrphaned},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := v1alpha1.ServiceInstanceSpec{BrokerName: "acme", ServiceName: "db", PlanName: "small", ExternalID: "ext-1"}
			si := &v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "team", UID: "uid-1", Generation: 1}, Spec: spec}
			h := newOpsHarness(t, si, opRecord("op", v1alpha1.VerbUpdate, v1alpha1.PhaseOrphaned, spec, time.Now()),
				&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}})
			if tc.held {
				h.broker.PutInstance(fakebroker.Instance{ID: "ext-1", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID})
			}
			h.broker.Script(fakebroker.OpUpdate, fakebroker.Respond{Status: tc.status, Description: "instance ext-1 does not exist"})

			h.reconcile(t, "op")
			require.Equal(t, tc.want, h.phase(t, "op"))
			assert.Equal(t, 1, h.broker.Count(fakebroker.OpUpdate), "the persisted spec was sent once")
			if tc.want == v1alpha1.PhaseCompensated {
				var op v1alpha1.BrokerOperation
				require.NoError(t, h.client.Get(context.Background(), client.ObjectKey{Namespace: "team", Name: "op"}, &op))
				assert.Contains(t, op.Status.Description, "the broker no longer holds the instance")
			}
		})
	}
}

// TestOperationsAsyncBindWhoseCredentialsDoNotFitIsUndone: an asynchronous
// bind that the broker finished, whose credentials the binding's secret
// transforms cannot apply to, is not retried for ever: the bind is undone
// at the broker (orphan mitigation) and the record says why, naming the
// transform and never a value.
func TestOperationsAsyncBindWhoseCredentialsDoNotFitIsUndone(t *testing.T) {
	b := &v1alpha1.ServiceBinding{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "team", UID: "uid-b", Generation: 1},
		Spec: v1alpha1.ServiceBindingSpec{InstanceName: "db", SecretName: "creds", ExternalID: "bind-1",
			SecretTransforms: []v1alpha1.SecretTransform{{RenameKey: &v1alpha1.RenameKeyTransform{From: "missing", To: "x"}}}}}
	rec := opRecord("op", v1alpha1.VerbBind, v1alpha1.PhaseInProgress, v1alpha1.ServiceInstanceSpec{}, time.Now())
	rec.Spec.Target = v1alpha1.OperationTarget{Kind: v1alpha1.KindServiceBinding, Name: "creds", UID: "uid-b", ExternalID: "bind-1", InstanceID: "ext-1"}
	rec.Labels[journal.LabelTargetUID] = "uid-b"
	rec.Status.CompletionTime = nil
	rec.Status.HTTPStatus = http.StatusAccepted
	h := newOpsHarness(t, b, rec)
	h.broker.PutInstance(fakebroker.Instance{ID: "ext-1", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID})
	h.broker.PutBinding(fakebroker.Binding{InstanceID: "ext-1", ID: "bind-1", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID,
		Credentials: map[string]any{"password": "s3cret-value"}})

	h.reconcile(t, "op")
	require.Equal(t, v1alpha1.PhaseOrphaned, h.phase(t, "op"), "the bind is undone, not retried")
	var op v1alpha1.BrokerOperation
	require.NoError(t, h.client.Get(context.Background(), client.ObjectKey{Namespace: "team", Name: "op"}, &op))
	assert.Contains(t, op.Status.Description, "spec.secretTransforms[0].renameKey.from")
	assert.Contains(t, op.Status.Description, "delete the binding and create it again")
	assert.NotContains(t, op.Status.Description, "s3cret-value")
	var secret corev1.Secret
	assert.True(t, apierrors.IsNotFound(h.client.Get(context.Background(), client.ObjectKey{Namespace: "team", Name: "creds"}, &secret)), "no Secret is written")

	h.reconcile(t, "op")
	assert.Equal(t, v1alpha1.PhaseCompensated, h.phase(t, "op"))
	_, held := h.broker.Binding("ext-1", "bind-1")
	assert.False(t, held, "the broker's binding is unbound")
}

// typedIndex answers Holds as its fields say.
type typedIndex struct{ held, cached bool }

func (i *typedIndex) Holds(_, _, _, _ string, _ types.UID) (bool, bool) { return i.held, i.cached }

// A provision of a typed kind that the API server persisted is committed,
// and its lock released, only once this replica's informer of the kind
// holds the object (admission's index then finds it), or when there is no
// informer to wait for, or when the grace has gone by.
func TestOperationsCommitOfATypedCreateWaitsForTheIndex(t *testing.T) {
	cat := fakebroker.DefaultCatalog()
	i := slices.IndexFunc(cat.Services, func(s osbapi.Service) bool { return s.Name == fakebroker.ServiceDB })
	require.GreaterOrEqual(t, i, 0)
	crd, _, err := render.Render("acme", &cat.Services[i], render.Options{})
	require.NoError(t, err)
	spec := v1alpha1.ServiceInstanceSpec{BrokerName: "acme", ServiceName: "db", PlanName: "small", ExternalID: "ext-1"}
	db := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": render.Group + "/" + render.Version, "kind": crd.Spec.Names.Kind,
		"metadata": map[string]any{"name": "db", "namespace": "team", "uid": "uid-1", "generation": int64(1)},
		"spec":     map[string]any{"brokerName": "acme", "plan": "small", "externalID": "ext-1"},
	}}
	for _, tc := range []struct {
		name      string
		index     *typedIndex
		after     time.Duration
		committed bool
	}{
		{name: "the informer holds it", index: &typedIndex{held: true, cached: true}, committed: true},
		{name: "the informer does not hold it yet", index: &typedIndex{cached: true}, committed: false},
		{name: "no informer of the kind in this replica", index: &typedIndex{}, committed: true},
		{name: "the informer lags past the grace", index: &typedIndex{cached: true}, after: 10 * time.Second, committed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			op := opRecord("op", v1alpha1.VerbProvision, v1alpha1.PhaseSucceeded, spec, time.Now())
			op.Spec.Target.APIGroup = render.Group
			op.Spec.Target.Kind = v1alpha1.TargetKind(crd.Spec.Names.Kind)
			h := newOpsHarness(t, crd.DeepCopy(), db.DeepCopy(), op)
			h.r.Typed = tc.index
			h.clock.Step(tc.after)
			key := journal.KeyOfRecord(op)
			_, ok, err := h.r.Leases.Acquire(context.Background(), key, &journal.Operation{Record: "op", Started: h.clock.Now()})
			require.NoError(t, err)
			require.True(t, ok)

			res := h.reconcile(t, "op")
			holder, err := h.r.Leases.Holder(context.Background(), key)
			require.NoError(t, err)
			if tc.committed {
				assert.Equal(t, v1alpha1.PhaseCommitted, h.phase(t, "op"))
				assert.Nil(t, holder, "the lock is released")
				return
			}
			assert.Equal(t, v1alpha1.PhaseSucceeded, h.phase(t, "op"))
			assert.NotNil(t, holder, "the lock is kept until admission's index holds the object")
			assert.Positive(t, res.RequeueAfter, "looked at again soon")
		})
	}
}
