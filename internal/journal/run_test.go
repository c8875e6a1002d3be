package journal

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

func newCarrier(t *testing.T) (*Carrier, client.Client) {
	t.Helper()
	scheme := runtime.NewScheme()
	require.NoError(t, coordinationv1.AddToScheme(scheme))
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	c := fake.NewClientBuilder().WithScheme(scheme).WithIndex(&v1alpha1.BrokerOperation{}, TargetUIDIndex, TargetUID).Build()
	return &Carrier{
		Leases:  &Leases{Client: c, Namespace: "lockstep-system", Duration: time.Minute},
		Journal: &Journal{Client: c, Namespace: "lockstep-system"},
		Log:     logr.Discard(),
	}, c
}

func intentFor(si *v1alpha1.ServiceInstance, verb v1alpha1.Verb) Intent {
	return Intent{ID: "0123456789", Target: si, Kind: v1alpha1.KindServiceInstance, ExternalID: "ext-1", Broker: "acme",
		Verb: verb, User: authenticationv1.UserInfo{Username: "alice"}, SpecHash: SpecHash(si.Spec)}
}

func dbInstance() *v1alpha1.ServiceInstance {
	return &v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "db", UID: "uid-1", Generation: 1},
		Spec: v1alpha1.ServiceInstanceSpec{BrokerName: "acme", ServiceName: "db", PlanName: "small", ExternalID: "ext-1"}}
}

func records(t *testing.T, c client.Client) []v1alpha1.BrokerOperation {
	t.Helper()
	var ops v1alpha1.BrokerOperationList
	require.NoError(t, c.List(context.Background(), &ops))
	return ops.Items
}

// Run writes once before the broker call (the lock, carrying the record);
// the record with the broker's answer follows, and only a refusal lets go
// of the lock.
func TestRunWritesTheLockOnlyBeforeTheCall(t *testing.T) {
	tests := []struct {
		name      string
		wantPhase v1alpha1.OperationPhase
		wantLock  bool
	}{
		{"success", v1alpha1.PhaseSucceeded, true},
		{"still running, or outcome unknown", v1alpha1.PhaseInProgress, true},
		{"refused", v1alpha1.PhaseFailed, false},
		{"orphan", v1alpha1.PhaseOrphaned, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, api := newCarrier(t)
			si := dbInstance()
			key := KeyOf(v1alpha1.KindServiceInstance, si)
			out := c.Run(context.Background(), intentFor(si, v1alpha1.VerbUpdate), func() Answer {
				assert.Empty(t, records(t, api), "no record before the call")
				var lease coordinationv1.Lease
				require.NoError(t, api.Get(context.Background(), client.ObjectKey{Namespace: "lockstep-system", Name: key.LeaseName()}, &lease))
				intent, err := CarriedRecord(&lease)
				require.NoError(t, err)
				require.NotNil(t, intent, "the lock carries the record")
				assert.Equal(t, "alice", intent.Spec.Requester.Username)
				assert.Equal(t, SpecHash(si.Spec), intent.Spec.SpecHash)
				return Answer{Phase: tt.wantPhase}
			})
			assert.Equal(t, []Write{{Kind: "Lease", Verb: "create"}}, out.Writes, "one API server write before the call")
			assert.True(t, out.Called())

			ops := records(t, api)
			require.Len(t, ops, 1)
			assert.Equal(t, tt.wantPhase, ops[0].Status.Phase)
			assert.Equal(t, out.Record, ops[0].Name)
			assert.NotNil(t, ops[0].Status.StartTime)
			held, err := c.Leases.HeldBy(context.Background(), key)
			require.NoError(t, err)
			if tt.wantLock {
				assert.Equal(t, out.Record, held)
			} else {
				assert.Empty(t, held)
			}
		})
	}
}

func TestRunRefusesWhileAnotherOperationHoldsTheLock(t *testing.T) {
	c, api := newCarrier(t)
	si := dbInstance()
	first := c.Run(context.Background(), intentFor(si, v1alpha1.VerbUpdate), func() Answer { return Answer{Phase: v1alpha1.PhaseInProgress} })
	require.True(t, first.Called())

	second := intentFor(si, v1alpha1.VerbUpdate)
	second.ID = "abcdefabcdef"
	second.User.Username = "bob"
	called := false
	out := c.Run(context.Background(), second, func() Answer { called = true; return Answer{Phase: v1alpha1.PhaseSucceeded} })
	assert.False(t, called)
	assert.False(t, out.Called())
	require.NotNil(t, out.Holder)
	assert.Equal(t, first.Record, out.Holder.Record)
	assert.Equal(t, "alice", out.Holder.User)
	assert.Len(t, records(t, api), 1, "nothing written for the refused change")
}

// A lock whose record was never written (lockstep stopped) is restored as
// a Pending record, once; the operations reconciler settles it.
func TestRestoreWritesTheRecordALockCarries(t *testing.T) {
	c, api := newCarrier(t)
	si := dbInstance()
	c.Crash = func(p Point) bool { return p == BeforeAnswer }
	out := c.Run(context.Background(), intentFor(si, v1alpha1.VerbProvision), func() Answer { return Answer{Phase: v1alpha1.PhaseSucceeded} })
	require.False(t, out.Stopped, "stopped after the reply")
	require.Empty(t, records(t, api))

	leases, err := c.Leases.Locks(context.Background())
	require.NoError(t, err)
	require.Len(t, leases, 1)
	wrote, err := c.Journal.Restore(context.Background(), &leases[0])
	require.NoError(t, err)
	assert.True(t, wrote)
	wrote, err = c.Journal.Restore(context.Background(), &leases[0])
	require.NoError(t, err)
	assert.False(t, wrote, "written once")

	ops := records(t, api)
	require.Len(t, ops, 1)
	assert.Equal(t, out.Record, ops[0].Name)
	assert.True(t, IsPending(&ops[0]))
	assert.Equal(t, v1alpha1.VerbProvision, ops[0].Spec.Verb)
	assert.Equal(t, "alice", ops[0].Spec.Requester.Username)
	assert.Equal(t, "uid-1", ops[0].Labels[LabelTargetUID])

	// The answer written late does not overwrite the settlement.
	require.NoError(t, c.Journal.SetPhase(context.Background(), &ops[0], nil, Answer{Phase: v1alpha1.PhaseFailed}))
	late := c.Journal.Draft(intentFor(si, v1alpha1.VerbProvision))
	c.settle(context.Background(), late, nil, "", Answer{Phase: v1alpha1.PhaseSucceeded})
	ops = records(t, api)
	require.Len(t, ops, 1)
	assert.Equal(t, v1alpha1.PhaseFailed, ops[0].Status.Phase)
}

func TestAfterRemembersAChangeUntilItsRecordIsWritten(t *testing.T) {
	a := NewAfter()
	change := Change{UID: "uid-1", Verb: v1alpha1.VerbProvision, SpecHash: "abc"}
	release := make(chan struct{})
	a.run("db-provision-1", &change, func() { <-release })

	assert.True(t, a.carriedOut("db-provision-1", change))
	assert.False(t, a.carriedOut("db-provision-1", Change{UID: "uid-1", Verb: v1alpha1.VerbProvision, SpecHash: "other"}), "another spec")
	assert.False(t, a.carriedOut("db-provision-2", change), "another operation")

	close(release)
	a.Wait()
	assert.False(t, a.carriedOut("db-provision-1", change), "forgotten once written: the journal says it from then on")

	var none *After
	ran := false
	none.run("db-provision-3", &change, func() { ran = true })
	assert.True(t, ran, "without After the record is written before Run returns")
	assert.False(t, none.carriedOut("db-provision-3", change))
}

// A retry of a change the broker carried out is allowed without a broker
// call while its record is still being written (this replica knows it), or
// once the record says so.
func TestRunAllowsTheRetryOfAChangeCarriedOut(t *testing.T) {
	c, _ := newCarrier(t)
	c.After = NewAfter()
	si := dbInstance()
	in := intentFor(si, v1alpha1.VerbProvision)
	unwritten := &Operation{Verb: v1alpha1.VerbProvision, Record: "db-provision-unwritten"}
	assert.False(t, c.identicalDone(context.Background(), "team", in.Change(), unwritten), "no such record in the journal")
	release := make(chan struct{})
	change := in.Change()
	c.After.run(unwritten.Record, &change, func() { <-release })
	assert.True(t, c.identicalDone(context.Background(), "team", in.Change(), unwritten))
	close(release)
	c.After.Wait()

	first := c.Run(context.Background(), in, func() Answer { return Answer{Phase: v1alpha1.PhaseSucceeded} })
	require.True(t, first.Called())
	c.After.Wait()
	retry := in
	retry.ID = "fedcba987654"
	out := c.Run(context.Background(), retry, func() Answer {
		t.Fatal("the broker is not called again")
		return Answer{}
	})
	assert.True(t, out.Identical)
}

// The API server asks the webhooks again for a request whose webhook call
// was cut short: the retry finds the lock held by its own first try, whose
// outcome nobody knows yet. Run says so (Repeat) without calling the
// broker again; the same change by someone else, or another change, is
// just another operation in flight.
func TestRunTellsTheRetryOfAChangeCutShort(t *testing.T) {
	c, _ := newCarrier(t)
	si := dbInstance()
	c.Crash = func(p Point) bool { return p == BeforeReply }
	first := c.Run(context.Background(), intentFor(si, v1alpha1.VerbDeprovision), func() Answer { return Answer{Phase: v1alpha1.PhaseSucceeded} })
	require.True(t, first.Stopped, "the replica stopped after the broker call")
	c.Crash = nil

	for _, tt := range []struct {
		name       string
		change     func(in *Intent)
		wantRepeat bool
	}{
		{"the same request again", func(*Intent) {}, true},
		{"the same change by another user", func(in *Intent) { in.User.Username = "bob" }, false},
		{"another spec by the same user", func(in *Intent) { in.SpecHash = "other" }, false},
		{"another verb by the same user", func(in *Intent) { in.Verb = v1alpha1.VerbUpdate }, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			retry := intentFor(si, v1alpha1.VerbDeprovision)
			retry.ID = "fedcba987654"
			tt.change(&retry)
			out := c.Run(context.Background(), retry, func() Answer {
				t.Error("the broker is not called while the first try holds the lock")
				return Answer{}
			})
			require.NotNil(t, out.Holder)
			assert.Equal(t, first.Record, out.Holder.Record)
			assert.False(t, out.Identical, "nobody knows that the first try was carried out")
			assert.Equal(t, tt.wantRepeat, out.Repeat)
		})
	}
}

// An answer is recorded in one write after the record's create: a success
// the API server already holds is Committed and its lock released at
// once, without an event (the reply told the requester); a refusal is an
// event on the object; a success not persisted yet is left, with its
// lock, to the operations reconciler's commit.
func TestRunCommitsASuccessTheAPIServerHolds(t *testing.T) {
	tests := []struct {
		name      string
		answer    v1alpha1.OperationPhase
		persisted bool
		wantPhase v1alpha1.OperationPhase
		wantLock  bool
		wantEvent string
	}{
		{"success, persisted", v1alpha1.PhaseSucceeded, true, v1alpha1.PhaseCommitted, false, ""},
		{"success, not persisted yet", v1alpha1.PhaseSucceeded, false, v1alpha1.PhaseSucceeded, true, ""},
		{"refused", v1alpha1.PhaseFailed, false, v1alpha1.PhaseFailed, false, "Warning ProvisionFailed"},
		{"outcome unknown", v1alpha1.PhaseInProgress, true, v1alpha1.PhaseInProgress, true, "Normal ProvisionInProgress"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, api := newCarrier(t)
			events := record.NewFakeRecorder(10)
			c.Journal.Recorder, c.Objects, c.Replied = events, api, true
			si := dbInstance()
			if tt.persisted {
				require.NoError(t, api.Create(context.Background(), si.DeepCopy()))
			}
			out := c.Run(context.Background(), intentFor(si, v1alpha1.VerbProvision), func() Answer { return Answer{Phase: tt.answer, HTTPStatus: 201} })
			require.True(t, out.Called())

			ops := records(t, api)
			require.Len(t, ops, 1)
			assert.Equal(t, tt.wantPhase, ops[0].Status.Phase)
			assert.EqualValues(t, 201, ops[0].Status.HTTPStatus, "the broker's answer in the same write")
			held, err := c.Leases.HeldBy(context.Background(), KeyOf(v1alpha1.KindServiceInstance, si))
			require.NoError(t, err)
			assert.Equal(t, tt.wantLock, held != "")
			close(events.Events)
			var got []string
			for e := range events.Events {
				got = append(got, e)
			}
			if tt.wantEvent == "" {
				assert.Empty(t, got)
			} else {
				require.Len(t, got, 1)
				assert.True(t, strings.HasPrefix(got[0], tt.wantEvent), got[0])
			}
		})
	}
}

// A delete that this process carried out at the broker is remembered, so
// that the object's finalizer goes without reading the journal or the
// lock; nothing else is.
func TestRunRemembersTheDeletesItCarriedOut(t *testing.T) {
	tests := []struct {
		name       string
		verb       v1alpha1.Verb
		answer     v1alpha1.OperationPhase
		remembered bool
	}{
		{"deprovision done", v1alpha1.VerbDeprovision, v1alpha1.PhaseSucceeded, true},
		{"unbind done", v1alpha1.VerbUnbind, v1alpha1.PhaseSucceeded, true},
		{"deprovision refused", v1alpha1.VerbDeprovision, v1alpha1.PhaseFailed, false},
		{"deprovision still running, or outcome unknown", v1alpha1.VerbDeprovision, v1alpha1.PhaseInProgress, false},
		{"update done", v1alpha1.VerbUpdate, v1alpha1.PhaseSucceeded, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := newCarrier(t)
			c.Leases.Deleted = NewRecent()
			si := dbInstance()
			out := c.Run(context.Background(), intentFor(si, tt.verb), func() Answer { return Answer{Phase: tt.answer} })
			require.True(t, out.Called())

			reads := 0
			unreadable := interceptor.Funcs{
				Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
					reads++
					return errors.New("read")
				},
				List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
					reads++
					return errors.New("read")
				},
			}
			api := fake.NewClientBuilder().WithInterceptorFuncs(unreadable).Build()
			leases := *c.Leases
			leases.Client = api
			got, err := DeleteRecorded(context.Background(), api, api, &leases, "lockstep-system",
				KeyOf(v1alpha1.KindServiceInstance, si), si.UID, tt.verb)
			if tt.remembered {
				require.NoError(t, err)
				assert.Equal(t, DeleteConfirmed, got)
				assert.Zero(t, reads, "confirmed without a read")
			} else {
				assert.Error(t, err, "not remembered: the journal is read")
				assert.NotZero(t, reads)
			}
		})
	}
}

// The record is written once, with the broker's answer: one create. A
// record the operations reconciler restored from the lock first is given
// the answer while it is still Pending, and kept as it is once it has one.
func TestRunWritesTheRecordOnce(t *testing.T) {
	tests := []struct {
		name        string
		restored    v1alpha1.OperationPhase // "" and not restored: none
		restore     bool
		wantCreates int
		wantPatches int
		wantPhase   v1alpha1.OperationPhase
		wantLock    bool
		wantEvents  int
	}{
		{"nobody wrote it", "", false, 1, 0, v1alpha1.PhaseFailed, false, 1},
		{"restored, still Pending", "", true, 1, 1, v1alpha1.PhaseFailed, false, 1},
		{"restored and settled first", v1alpha1.PhaseOrphaned, true, 1, 0, v1alpha1.PhaseOrphaned, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, api := newCarrier(t)
			creates, patches := 0, 0
			counted := interceptor.NewClient(api.(client.WithWatch), interceptor.Funcs{
				Create: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
					if _, ok := obj.(*v1alpha1.BrokerOperation); ok {
						creates++
					}
					return cl.Create(ctx, obj, opts...)
				},
				Patch: func(ctx context.Context, cl client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
					if _, ok := obj.(*v1alpha1.BrokerOperation); ok {
						patches++
					}
					return cl.Patch(ctx, obj, p, opts...)
				},
			})
			c.Journal.Client = counted
			events := record.NewFakeRecorder(10)
			c.Journal.Recorder = events
			si := dbInstance()
			in := intentFor(si, v1alpha1.VerbUpdate)
			out := c.Run(context.Background(), in, func() Answer {
				if tt.restore {
					restored := c.Journal.Draft(in)
					restored.Status.Phase = tt.restored
					require.NoError(t, api.Create(context.Background(), restored))
				}
				return Answer{Phase: v1alpha1.PhaseFailed, HTTPStatus: 422, Description: "no"}
			})
			require.True(t, out.Called())

			assert.Equal(t, tt.wantCreates, creates, "records created")
			assert.Equal(t, tt.wantPatches, patches, "records patched")
			ops := records(t, api)
			require.Len(t, ops, 1)
			assert.Equal(t, tt.wantPhase, ops[0].Status.Phase)
			held, err := c.Leases.HeldBy(context.Background(), KeyOf(v1alpha1.KindServiceInstance, si))
			require.NoError(t, err)
			assert.Equal(t, tt.wantLock, held != "", "a refusal's lock is released by the answer that settles its record, not by another's")
			assert.Len(t, events.Events, tt.wantEvents, "the refusal is an event only when its answer is the one recorded")
		})
	}
}
