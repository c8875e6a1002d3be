package admission

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/broker/osbclient"
	"github.com/lockstep-dev/lockstep/internal/catalog"
)

// behaviour is how the broker answers the request of the verb under test
// (op), and the last_operation polls that follow (poll).
type behaviour struct {
	name   string
	script func(b *fakebroker.Broker, op, poll fakebroker.Op)
	// budget, when set, is the admission budget: a broker that hangs is
	// given up on then.
	budget time.Duration
	// unreachable points the catalog at a port nobody listens on.
	unreachable bool
}

var (
	answers = behaviour{name: "answers at once"}
	async   = behaviour{name: "202, then succeeded", script: func(b *fakebroker.Broker, op, _ fakebroker.Op) {
		b.Script(op, fakebroker.Respond{Async: &fakebroker.Async{InProgressPolls: 1}})
	}}
	asyncFails = behaviour{name: "202, then failed", script: func(b *fakebroker.Broker, op, _ fakebroker.Op) {
		b.Script(op, fakebroker.Respond{Async: &fakebroker.Async{Fail: true, Description: "no quota"}})
	}}
	pollErrors = behaviour{name: "202, then every poll 502", script: func(b *fakebroker.Broker, op, poll fakebroker.Op) {
		b.Script(op, fakebroker.Respond{Async: &fakebroker.Async{}})
		b.Always(poll, fakebroker.Respond{Status: http.StatusBadGateway, Description: "upstream gone"})
	}}
	hangs = behaviour{name: "does it, hangs past the timeout", budget: 300 * time.Millisecond, script: func(b *fakebroker.Broker, op, _ fakebroker.Op) {
		b.Script(op, fakebroker.Respond{Delay: time.Hour})
	}}
	drops = behaviour{name: "does it, drops the connection before any answer", script: func(b *fakebroker.Broker, op, _ fakebroker.Op) {
		b.Script(op, fakebroker.Respond{CloseConnection: true, Apply: true})
	}}
	concurrency = behaviour{name: "422 ConcurrencyError", script: func(b *fakebroker.Broker, op, _ fakebroker.Op) {
		b.Script(op, fakebroker.Respond{Status: http.StatusUnprocessableEntity, Error: "ConcurrencyError", Description: "busy"})
	}}
	gone = behaviour{name: "410 Gone", script: func(b *fakebroker.Broker, op, _ fakebroker.Op) {
		// A broker answers a delete with 410 when it holds nothing.
		deletes := op == fakebroker.OpDeprovision || op == fakebroker.OpUnbind
		b.Script(op, fakebroker.Respond{Status: http.StatusGone, Apply: deletes})
	}}
	fails = behaviour{name: "500, does nothing", script: func(b *fakebroker.Broker, op, _ fakebroker.Op) {
		b.Script(op, fakebroker.Respond{Status: http.StatusInternalServerError, Description: "oops"})
	}}
	garbage = behaviour{name: "does it, answers garbage", script: func(b *fakebroker.Broker, op, _ fakebroker.Op) {
		b.Script(op, fakebroker.Respond{Malformed: true, Apply: true})
	}}
	down = behaviour{name: "connection refused", unreachable: true}
)

// What a person reads when the broker's answer is lost.
const (
	noAnswer     = "but no answer came back"
	notLearned   = "but lockstep could not learn how it ended"
	isUnknown    = "the outcome is unknown"
	notReachable = "retry when the broker is reachable"
)

// TestBrokerBehavioursByVerb is one table of broker behaviours × verbs,
// through the admission chain, a real broker over HTTP and the operations
// reconciler. Each row says what the requester is told (what kubectl
// prints), what the journal records, what the record tells the object's
// InSync, and what lockstep sends the broker next (once the broker
// answers normally again), and the record's final phase. The rule is one
// for every verb: done is allowed; refused (an answer that says no, or a
// request that never left) is refused and nothing follows; a request that
// went out and got no answer is unknown: a provision or bind is undone
// (orphan mitigation), an update, deprovision or unbind is followed until
// the broker tells, then committed, re-applied or finished.
func TestBrokerBehavioursByVerb(t *testing.T) {
	const (
		lastOp        = fakebroker.OpInstanceLastOperation
		bindingLastOp = fakebroker.OpBindingLastOperation
	)
	ops := func(o ...fakebroker.Op) []fakebroker.Op { return o }
	tests := []struct {
		verb    v1alpha1.Verb
		broker  behaviour
		kubectl []string // fragments of the refusal; none: allowed
		record  v1alpha1.OperationPhase
		inSync  metav1.ConditionStatus // the record's note for the object; "" none
		next    []fakebroker.Op
		final   v1alpha1.OperationPhase
	}{
		{v1alpha1.VerbProvision, answers, nil, v1alpha1.PhaseSucceeded, "", nil, v1alpha1.PhaseCommitted},
		{v1alpha1.VerbProvision, async, nil, v1alpha1.PhaseSucceeded, "", nil, v1alpha1.PhaseCommitted},
		{v1alpha1.VerbProvision, asyncFails, []string{`failed to provision instance "db"`, "no quota"}, v1alpha1.PhaseFailed, "", nil, v1alpha1.PhaseFailed},
		{v1alpha1.VerbProvision, pollErrors, []string{notLearned, isUnknown}, v1alpha1.PhaseInProgress, metav1.ConditionUnknown,
			ops(lastOp, fakebroker.OpDeprovision), v1alpha1.PhaseCompensated},
		{v1alpha1.VerbProvision, hangs, []string{noAnswer, isUnknown}, v1alpha1.PhaseOrphaned, "", ops(fakebroker.OpDeprovision), v1alpha1.PhaseCompensated},
		{v1alpha1.VerbProvision, drops, []string{noAnswer, isUnknown}, v1alpha1.PhaseOrphaned, "", ops(fakebroker.OpDeprovision), v1alpha1.PhaseCompensated},
		{v1alpha1.VerbProvision, concurrency, []string{"ConcurrencyError"}, v1alpha1.PhaseFailed, "", nil, v1alpha1.PhaseFailed},
		{v1alpha1.VerbProvision, gone, []string{"(HTTP 410)"}, v1alpha1.PhaseFailed, "", nil, v1alpha1.PhaseFailed},
		{v1alpha1.VerbProvision, fails, []string{noAnswer, isUnknown}, v1alpha1.PhaseOrphaned, "", ops(fakebroker.OpDeprovision), v1alpha1.PhaseCompensated},
		{v1alpha1.VerbProvision, garbage, []string{noAnswer, "malformed", isUnknown}, v1alpha1.PhaseOrphaned, "", ops(fakebroker.OpDeprovision), v1alpha1.PhaseCompensated},
		{v1alpha1.VerbProvision, down, []string{notReachable, "nothing was created"}, v1alpha1.PhaseFailed, "", nil, v1alpha1.PhaseFailed},

		{v1alpha1.VerbUpdate, answers, nil, v1alpha1.PhaseSucceeded, "", nil, v1alpha1.PhaseCommitted},
		{v1alpha1.VerbUpdate, async, nil, v1alpha1.PhaseSucceeded, "", nil, v1alpha1.PhaseCommitted},
		{v1alpha1.VerbUpdate, asyncFails, []string{`failed to change plan of instance "db"`}, v1alpha1.PhaseFailed, "", nil, v1alpha1.PhaseFailed},
		{v1alpha1.VerbUpdate, pollErrors, []string{notLearned, isUnknown}, v1alpha1.PhaseInProgress, metav1.ConditionUnknown,
			ops(lastOp, fakebroker.OpUpdate), v1alpha1.PhaseCompensated},
		{v1alpha1.VerbUpdate, hangs, []string{noAnswer, isUnknown, "the outcome is unknown: the instance keeps its spec for now"}, v1alpha1.PhaseInProgress, metav1.ConditionUnknown,
			ops(lastOp, fakebroker.OpUpdate), v1alpha1.PhaseCompensated},
		{v1alpha1.VerbUpdate, drops, []string{noAnswer, isUnknown}, v1alpha1.PhaseInProgress, metav1.ConditionUnknown,
			ops(lastOp, fakebroker.OpUpdate), v1alpha1.PhaseCompensated},
		{v1alpha1.VerbUpdate, concurrency, []string{"ConcurrencyError"}, v1alpha1.PhaseFailed, "", nil, v1alpha1.PhaseFailed},
		{v1alpha1.VerbUpdate, gone, []string{"(HTTP 410)"}, v1alpha1.PhaseFailed, "", nil, v1alpha1.PhaseFailed},
		{v1alpha1.VerbUpdate, fails, []string{noAnswer, isUnknown}, v1alpha1.PhaseInProgress, metav1.ConditionUnknown,
			ops(lastOp, fakebroker.OpUpdate), v1alpha1.PhaseCompensated},
		{v1alpha1.VerbUpdate, garbage, []string{noAnswer, isUnknown}, v1alpha1.PhaseInProgress, metav1.ConditionUnknown,
			ops(lastOp, fakebroker.OpUpdate), v1alpha1.PhaseCompensated},
		{v1alpha1.VerbUpdate, down, []string{notReachable, `the instance keeps plan "small"`}, v1alpha1.PhaseFailed, "", nil, v1alpha1.PhaseFailed},

		{v1alpha1.VerbDeprovision, answers, nil, v1alpha1.PhaseSucceeded, "", nil, v1alpha1.PhaseCommitted},
		{v1alpha1.VerbDeprovision, async, nil, v1alpha1.PhaseSucceeded, "", nil, v1alpha1.PhaseCommitted},
		{v1alpha1.VerbDeprovision, asyncFails, []string{`failed to deprovision instance "db"`}, v1alpha1.PhaseFailed, "", nil, v1alpha1.PhaseFailed},
		{v1alpha1.VerbDeprovision, pollErrors, []string{notLearned, isUnknown}, v1alpha1.PhaseInProgress, metav1.ConditionUnknown,
			ops(lastOp), v1alpha1.PhaseCommitted},
		{v1alpha1.VerbDeprovision, hangs, []string{noAnswer, isUnknown, "if the broker deprovisioned it, lockstep deletes the instance"},
			v1alpha1.PhaseInProgress, metav1.ConditionUnknown, ops(lastOp), v1alpha1.PhaseCommitted},
		{v1alpha1.VerbDeprovision, drops, []string{noAnswer, isUnknown}, v1alpha1.PhaseInProgress, metav1.ConditionUnknown, ops(lastOp), v1alpha1.PhaseCommitted},
		{v1alpha1.VerbDeprovision, concurrency, []string{"ConcurrencyError"}, v1alpha1.PhaseFailed, "", nil, v1alpha1.PhaseFailed},
		{v1alpha1.VerbDeprovision, gone, nil, v1alpha1.PhaseSucceeded, "", nil, v1alpha1.PhaseCommitted},
		{v1alpha1.VerbDeprovision, fails, []string{noAnswer, isUnknown}, v1alpha1.PhaseInProgress, metav1.ConditionUnknown,
			ops(lastOp, fakebroker.OpGetInstance), v1alpha1.PhaseFailed},
		// A delete's 200 says all there is to say: its body carries nothing.
		{v1alpha1.VerbDeprovision, garbage, nil, v1alpha1.PhaseSucceeded, "", nil, v1alpha1.PhaseCommitted},
		{v1alpha1.VerbDeprovision, down, []string{notReachable, "no deletion was started"}, v1alpha1.PhaseFailed, "", nil, v1alpha1.PhaseFailed},

		{v1alpha1.VerbBind, answers, nil, v1alpha1.PhaseSucceeded, "", nil, v1alpha1.PhaseCommitted},
		{v1alpha1.VerbBind, async, nil, v1alpha1.PhaseSucceeded, "", nil, v1alpha1.PhaseCommitted},
		{v1alpha1.VerbBind, asyncFails, []string{`failed to bind instance "db"`}, v1alpha1.PhaseFailed, "", nil, v1alpha1.PhaseFailed},
		{v1alpha1.VerbBind, pollErrors, []string{notLearned, isUnknown}, v1alpha1.PhaseInProgress, metav1.ConditionUnknown,
			ops(bindingLastOp, fakebroker.OpUnbind), v1alpha1.PhaseCompensated},
		{v1alpha1.VerbBind, hangs, []string{noAnswer, isUnknown}, v1alpha1.PhaseOrphaned, "", ops(fakebroker.OpUnbind), v1alpha1.PhaseCompensated},
		{v1alpha1.VerbBind, drops, []string{noAnswer, isUnknown}, v1alpha1.PhaseOrphaned, "", ops(fakebroker.OpUnbind), v1alpha1.PhaseCompensated},
		{v1alpha1.VerbBind, concurrency, []string{"ConcurrencyError"}, v1alpha1.PhaseFailed, "", nil, v1alpha1.PhaseFailed},
		{v1alpha1.VerbBind, gone, []string{"(HTTP 410)"}, v1alpha1.PhaseFailed, "", nil, v1alpha1.PhaseFailed},
		{v1alpha1.VerbBind, fails, []string{noAnswer, isUnknown}, v1alpha1.PhaseOrphaned, "", ops(fakebroker.OpUnbind), v1alpha1.PhaseCompensated},
		{v1alpha1.VerbBind, garbage, []string{noAnswer, isUnknown}, v1alpha1.PhaseOrphaned, "", ops(fakebroker.OpUnbind), v1alpha1.PhaseCompensated},
		{v1alpha1.VerbBind, down, []string{notReachable, "nothing was created"}, v1alpha1.PhaseFailed, "", nil, v1alpha1.PhaseFailed},

		{v1alpha1.VerbUnbind, answers, nil, v1alpha1.PhaseSucceeded, "", nil, v1alpha1.PhaseCommitted},
		{v1alpha1.VerbUnbind, async, nil, v1alpha1.PhaseSucceeded, "", nil, v1alpha1.PhaseCommitted},
		{v1alpha1.VerbUnbind, asyncFails, []string{`failed to unbind binding "creds"`}, v1alpha1.PhaseFailed, "", nil, v1alpha1.PhaseFailed},
		{v1alpha1.VerbUnbind, pollErrors, []string{notLearned, isUnknown}, v1alpha1.PhaseInProgress, metav1.ConditionUnknown, ops(bindingLastOp), v1alpha1.PhaseCommitted},
		{v1alpha1.VerbUnbind, hangs, []string{noAnswer, isUnknown}, v1alpha1.PhaseInProgress, metav1.ConditionUnknown, ops(bindingLastOp), v1alpha1.PhaseCommitted},
		{v1alpha1.VerbUnbind, drops, []string{noAnswer, isUnknown}, v1alpha1.PhaseInProgress, metav1.ConditionUnknown, ops(bindingLastOp), v1alpha1.PhaseCommitted},
		{v1alpha1.VerbUnbind, concurrency, []string{"ConcurrencyError"}, v1alpha1.PhaseFailed, "", nil, v1alpha1.PhaseFailed},
		{v1alpha1.VerbUnbind, gone, nil, v1alpha1.PhaseSucceeded, "", nil, v1alpha1.PhaseCommitted},
		{v1alpha1.VerbUnbind, fails, []string{noAnswer, isUnknown}, v1alpha1.PhaseInProgress, metav1.ConditionUnknown,
			ops(bindingLastOp, fakebroker.OpGetBinding), v1alpha1.PhaseFailed},
		{v1alpha1.VerbUnbind, garbage, nil, v1alpha1.PhaseSucceeded, "", nil, v1alpha1.PhaseCommitted},
		{v1alpha1.VerbUnbind, down, []string{notReachable, "stay as they were"}, v1alpha1.PhaseFailed, "", nil, v1alpha1.PhaseFailed},
	}
	for _, tt := range tests {
		t.Run(string(tt.verb)+": "+tt.broker.name, func(t *testing.T) {
			v := verbUnderTest(tt.verb)
			h := newHarness(t, v.objects()...)
			v.seed(h.broker)
			if tt.broker.script != nil {
				tt.broker.script(h.broker, v.op, v.poll)
			}
			if tt.broker.budget > 0 {
				h.validator.Budget, h.bindings.Budget = tt.broker.budget, tt.broker.budget
			}
			if tt.broker.unreachable {
				pointAtNobody(t, h)
			}

			err := v.admit(h)
			if tt.kubectl == nil {
				require.NoError(t, err)
				v.persist(t, h) // what the API server does with an allowed request
			} else {
				require.Error(t, err)
				for _, m := range tt.kubectl {
					assert.Contains(t, err.Error(), m)
				}
			}
			records := h.records(t)
			require.Len(t, records, 1)
			assert.Equal(t, tt.record, records[0].Status.Phase, "the journal: %s", records[0].Status.Description)
			if tt.inSync == "" {
				assert.Nil(t, records[0].Status.TargetInSync)
			} else if assert.NotNil(t, records[0].Status.TargetInSync) {
				assert.Equal(t, tt.inSync, records[0].Status.TargetInSync.Status, "what the object's InSync says")
			}

			// The broker answers normally again; the operations reconciler
			// takes the record to its end.
			h.broker.Reset()
			h.broker.ResetCalls()
			h.settle(t)
			var next []fakebroker.Op
			for _, c := range h.broker.Calls() {
				next = append(next, c.Op)
			}
			assert.Equal(t, tt.next, next, "what lockstep sends next")
			records = h.records(t)
			require.Len(t, records, 1)
			assert.Equal(t, tt.final, records[0].Status.Phase, "the journal, in the end: %s", records[0].Status.Description)
			v.bothSidesEqual(t, h)
		})
	}
}

// verb is one verb of the table: its objects, requests and invariant.
type verb struct {
	v1alpha1.Verb
	op, poll fakebroker.Op
}

func verbUnderTest(v v1alpha1.Verb) verb {
	switch v {
	case v1alpha1.VerbProvision:
		return verb{v, fakebroker.OpProvision, fakebroker.OpInstanceLastOperation}
	case v1alpha1.VerbUpdate:
		return verb{v, fakebroker.OpUpdate, fakebroker.OpInstanceLastOperation}
	case v1alpha1.VerbDeprovision:
		return verb{v, fakebroker.OpDeprovision, fakebroker.OpInstanceLastOperation}
	case v1alpha1.VerbBind:
		return verb{v, fakebroker.OpBind, fakebroker.OpBindingLastOperation}
	}
	return verb{v, fakebroker.OpUnbind, fakebroker.OpBindingLastOperation}
}

func generation(g int64) func(*v1alpha1.ServiceInstance) {
	return func(si *v1alpha1.ServiceInstance) { si.Generation = g }
}

// objects are what the API server holds before the request.
func (v verb) objects() []runtime.Object {
	db := instance("small", "", generation(1))
	switch v.Verb {
	case v1alpha1.VerbProvision:
		return nil
	case v1alpha1.VerbUnbind:
		return []runtime.Object{db, binding("")}
	}
	return []runtime.Object{db}
}

// seed puts into the broker what it holds before the request.
func (v verb) seed(b *fakebroker.Broker) {
	if v.Verb == v1alpha1.VerbProvision {
		return
	}
	b.PutInstance(fakebroker.Instance{ID: "ext-1", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID})
	if v.Verb == v1alpha1.VerbUnbind {
		b.PutBinding(fakebroker.Binding{InstanceID: "ext-1", ID: "bind-1", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID})
	}
}

func (v verb) admit(h *harness) error {
	var err error
	switch v.Verb {
	case v1alpha1.VerbProvision:
		_, err = h.admit(admissionv1.Create, nil, instance("small", "", generation(1)), false)
	case v1alpha1.VerbUpdate:
		_, err = h.admit(admissionv1.Update, instance("small", "", generation(1)), instance("large", "", generation(2)), false)
	case v1alpha1.VerbDeprovision:
		_, err = h.admit(admissionv1.Delete, instance("small", "", generation(1)), nil, false)
	case v1alpha1.VerbBind:
		_, err = h.admitBinding(admissionv1.Create, nil, binding(""), false)
	default:
		_, err = h.admitBinding(admissionv1.Delete, binding(""), nil, false)
	}
	return err
}

// persist does what the API server does with an allowed request.
func (v verb) persist(t *testing.T, h *harness) {
	t.Helper()
	ctx := context.Background()
	switch v.Verb {
	case v1alpha1.VerbProvision:
		require.NoError(t, h.client.Create(ctx, instance("small", "", generation(1))))
	case v1alpha1.VerbUpdate:
		var si v1alpha1.ServiceInstance
		require.NoError(t, h.client.Get(ctx, client.ObjectKey{Namespace: "team", Name: "db"}, &si))
		si.Spec, si.Generation = instance("large", "").Spec, 2
		require.NoError(t, h.client.Update(ctx, &si))
	case v1alpha1.VerbDeprovision:
		require.NoError(t, h.client.Delete(ctx, instance("small", "")))
	case v1alpha1.VerbBind:
		require.NoError(t, h.client.Create(ctx, binding("")))
	default:
		require.NoError(t, h.client.Delete(ctx, binding("")))
	}
}

// bothSidesEqual checks the invariant: what the broker holds equals what
// the API server holds, or the record says why not.
func (v verb) bothSidesEqual(t *testing.T, h *harness) {
	t.Helper()
	ctx := context.Background()
	held, brokerHas := h.broker.Instance("ext-1")
	var si v1alpha1.ServiceInstance
	err := h.client.Get(ctx, client.ObjectKey{Namespace: "team", Name: "db"}, &si)
	clusterHas := err == nil && si.DeletionTimestamp == nil
	assert.Equal(t, clusterHas, brokerHas, "the instance on both sides or on neither")
	if brokerHas && clusterHas {
		want := fakebroker.PlanSmallID
		if si.Spec.PlanName == "large" {
			want = fakebroker.PlanLargeID
		}
		assert.Equal(t, want, held.PlanID, "the broker holds the plan the API server holds")
	}
	if v.Verb == v1alpha1.VerbBind || v.Verb == v1alpha1.VerbUnbind {
		_, brokerBinds := h.broker.Binding("ext-1", "bind-1")
		var b v1alpha1.ServiceBinding
		err := h.client.Get(ctx, client.ObjectKey{Namespace: "team", Name: "creds"}, &b)
		assert.Equal(t, err == nil && b.DeletionTimestamp == nil, brokerBinds, "the binding on both sides or on neither")
	}
}

// pointAtNobody makes the broker's catalog entry point at a port nobody
// listens on: the request certainly never reaches a broker.
func pointAtNobody(t *testing.T, h *harness) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	c, err := osbclient.New(osbclient.Config{URL: "http://" + addr, Timeout: time.Second})
	require.NoError(t, err)
	entry, _ := h.cache.Get("acme")
	h.cache.Store(catalog.NewEntry("acme", c, entry.Catalog, nil, time.Now()))
}

// A bind the broker carried out whose credentials lockstep cannot keep is
// undone as an orphan, journaled, by the operations reconciler, which
// tries again, later each time, until the broker confirms the unbind,
// even when the broker is cut off exactly then.
func TestBindUndoneWhenItsCredentialsCannotBeKept(t *testing.T) {
	shared := instance("shared", "", func(si *v1alpha1.ServiceInstance) {
		si.Spec.ServiceName, si.Spec.PlanName = fakebroker.ServiceQueue, fakebroker.PlanShared
	})
	tests := []struct {
		name   string
		script func(b *fakebroker.Broker)
		say    string
	}{
		{"asynchronous, at a broker that does not let lockstep fetch bindings", func(b *fakebroker.Broker) {
			b.Script(fakebroker.OpBind, fakebroker.Respond{Async: &fakebroker.Async{}})
		}, "does not let lockstep fetch bindings (bindings_retrievable is false)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, shared)
			h.broker.PutInstance(fakebroker.Instance{ID: "ext-1", ServiceID: fakebroker.ServiceQueueID, PlanID: fakebroker.PlanSharedID})
			tt.script(h.broker)
			_, err := h.admitBinding(admissionv1.Create, nil, binding(""), false)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.say)
			assert.Contains(t, err.Error(), "lockstep undoes it at the broker (orphan mitigation")
			records := h.records(t)
			require.Len(t, records, 1)
			assert.Equal(t, v1alpha1.PhaseOrphaned, records[0].Status.Phase, "journaled as an orphan, never a detached call")
			assert.Zero(t, h.broker.Count(fakebroker.OpUnbind), "admission does not undo it itself")

			// The broker is still binding (422 ConcurrencyError), then cut
			// off when the undo comes, then done with the bind.
			r := h.operations(t)
			var waits []time.Duration
			undo := func() {
				res, err := r.Reconcile(context.Background(), requestFor(records[0]))
				require.NoError(t, err)
				waits = append(waits, res.RequeueAfter)
			}
			undo()
			h.broker.Script(fakebroker.OpUnbind, fakebroker.Respond{CloseConnection: true})
			undo()
			finishBind(t, h)
			undo()
			assert.Equal(t, []time.Duration{time.Millisecond, 2 * time.Millisecond, 0}, waits, "tried again, later each time, until confirmed")
			assert.Equal(t, 3, h.broker.Count(fakebroker.OpUnbind))
			assert.Equal(t, v1alpha1.PhaseCompensated, h.records(t)[0].Status.Phase)
			_, held := h.broker.Binding("ext-1", "bind-1")
			assert.False(t, held, "the broker no longer holds the binding")
		})
	}
}

// A broker restarted with new service and plan ids refuses the old ones:
// the refusal reads the catalog again (once per refresh interval), says
// so, and the same request sent again uses the new ids.
func TestRefusalOfStaleIDsRefreshesTheCatalog(t *testing.T) {
	h := newHarness(t)
	h.cache.SetFetcher(func(ctx context.Context, _ string) (*catalog.Entry, error) {
		entry, _ := h.cache.Get("acme")
		cat, err := entry.Client.Catalog(ctx, osbclient.RequestMeta{})
		if err != nil {
			return nil, err
		}
		return catalog.NewEntry("acme", entry.Client, cat, nil, time.Now()), nil
	})
	restarted := fakebroker.DefaultCatalog()
	for i := range restarted.Services {
		restarted.Services[i].ID += "-v2"
		for j := range restarted.Services[i].Plans {
			restarted.Services[i].Plans[j].ID += "-v2"
		}
	}
	require.NoError(t, h.broker.SetCatalog(restarted))

	_, err := h.admit(admissionv1.Create, nil, instance("small", ""), false)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `the broker's catalog no longer has service id "db-service-id"; lockstep read the catalog again; nothing was created: retry`)
	assert.Equal(t, 1, h.broker.Count(fakebroker.OpCatalog), "one refresh")

	h.deps.RefusalMemory = 0
	h.validator = NewInstanceValidator(h.deps, nil)
	_, err = h.admit(admissionv1.Create, nil, instance("small", ""), false)
	require.NoError(t, err, "the retry sends the new ids")
	sent, ok := h.broker.LastCall(fakebroker.OpProvision)
	require.True(t, ok)
	assert.Equal(t, fakebroker.PlanSmallID+"-v2", sent.JSON["plan_id"])
}

// finishBind lets the broker finish the asynchronous bind in flight.
func finishBind(t *testing.T, h *harness) {
	t.Helper()
	h.broker.Finish()
	entry, _ := h.cache.Get("acme")
	last, err := entry.Client.BindingLastOperation(context.Background(), osbclient.RequestMeta{},
		osbclient.BindingLastOperationRequest{InstanceID: "ext-1", BindingID: "bind-1"})
	require.NoError(t, err)
	require.Equal(t, "succeeded", string(last.State))
}

func requestFor(op v1alpha1.BrokerOperation) ctrl.Request {
	return ctrl.Request{NamespacedName: client.ObjectKeyFromObject(&op)}
}
