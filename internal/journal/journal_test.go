package journal

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

func TestJournalBeginThenRecord(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	c := fake.NewClientBuilder().WithScheme(scheme).WithIndex(&v1alpha1.BrokerOperation{}, TargetUIDIndex, TargetUID).Build()
	events := record.NewFakeRecorder(10)
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	j := &Journal{Client: c, Recorder: events, Clock: clocktesting.NewFakePassiveClock(now)}

	si := &v1alpha1.ServiceInstance{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "team", UID: "uid-1", Generation: 2},
		Spec:       v1alpha1.ServiceInstanceSpec{ServiceName: "db", PlanName: "large", ExternalID: "ext-1"},
	}
	op, err := begin(context.Background(), j, Intent{
		ID: "0b6c5e2a-1111-2222-3333-444455556666", Target: si, Kind: "ServiceInstance", ExternalID: "ext-1",
		Broker: "acme", Verb: v1alpha1.VerbUpdate, SpecHash: SpecHash(si.Spec),
		User: authenticationv1.UserInfo{Username: "alice", UID: "u1", Groups: []string{"devs"}, Extra: map[string]authenticationv1.ExtraValue{"token": {"secret"}}},
	})
	require.NoError(t, err)
	assert.Equal(t, "db-update-0b6c5e2a", op.Name)

	var got v1alpha1.BrokerOperation
	require.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(op), &got))
	assert.Empty(t, got.Status.Phase, "written before the broker is called, in one write: no phase is Pending")
	assert.Equal(t, "alice", got.Spec.Requester.Username)
	assert.Equal(t, int64(2), got.Spec.Generation)
	assert.Equal(t, SpecHash(si.Spec), got.Spec.SpecHash)
	assert.Equal(t, "uid-1", got.Labels[LabelTargetUID])

	require.NoError(t, j.SetPhase(context.Background(), op, si, Answer{Phase: v1alpha1.PhaseFailed, HTTPStatus: 422, Description: "no capacity"}))
	require.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(op), &got))
	assert.Equal(t, v1alpha1.PhaseFailed, got.Status.Phase)
	assert.Equal(t, int32(422), got.Status.HTTPStatus)
	assert.Equal(t, "no capacity", got.Status.Description)
	require.NotNil(t, got.Status.CompletionTime)
	require.NotNil(t, got.Status.StartTime, "the start, the record's creation, is written with the answer")

	event := <-events.Events
	assert.True(t, strings.HasPrefix(event, "Warning UpdateFailed update at broker \"acme\" asked by \"alice\": failed"), event)
	assert.NotContains(t, event, "secret", "the user's extra info is not recorded")
}

func TestOperationName(t *testing.T) {
	assert.Equal(t, "db-provision-abcd1234", OperationName("db", v1alpha1.VerbProvision, "abcd1234-5678"))
	long := OperationName(strings.Repeat("a", 300), v1alpha1.VerbDeprovision, "abcd1234")
	assert.LessOrEqual(t, len(long), 253)
	assert.True(t, strings.HasSuffix(long, "-deprovision-abcd1234"))
}

func TestSpecHashFollowsTheSpec(t *testing.T) {
	a := v1alpha1.ServiceInstanceSpec{PlanName: "small"}
	b := v1alpha1.ServiceInstanceSpec{PlanName: "large"}
	assert.Equal(t, SpecHash(a), SpecHash(a))
	assert.NotEqual(t, SpecHash(a), SpecHash(b))
	assert.Len(t, SpecHash(a), 16)
}

func TestSpecHashIgnoresEncoding(t *testing.T) {
	a := v1alpha1.ServiceInstanceSpec{PlanName: "small", Parameters: &runtime.RawExtension{Raw: []byte(`{"b": 1, "a": 2.0}`)}}
	b := v1alpha1.ServiceInstanceSpec{PlanName: "small", Parameters: &runtime.RawExtension{Raw: []byte(`{"a":2,"b":1}`)}}
	assert.Equal(t, SpecHash(a), SpecHash(b))
}

// A Secret's content is not in the spec: what changes the spec hash when
// parameters from Secrets are sent again is the spec's references and
// spec.parametersFromGeneration.
func TestSpecHashFollowsParametersFrom(t *testing.T) {
	ref := []v1alpha1.ParametersFromSource{{SecretKeyRef: v1alpha1.SecretKeyReference{Name: "db-admin", Key: "parameters"}}}
	a := v1alpha1.ServiceInstanceSpec{PlanName: "small", ParametersFrom: ref}
	other := v1alpha1.ServiceInstanceSpec{PlanName: "small", ParametersFrom: []v1alpha1.ParametersFromSource{{SecretKeyRef: v1alpha1.SecretKeyReference{Name: "db-admin", Key: "other"}}}}
	again := v1alpha1.ServiceInstanceSpec{PlanName: "small", ParametersFrom: ref, ParametersFromGeneration: 2}
	assert.NotEqual(t, SpecHash(a), SpecHash(v1alpha1.ServiceInstanceSpec{PlanName: "small"}))
	assert.NotEqual(t, SpecHash(a), SpecHash(other))
	assert.NotEqual(t, SpecHash(a), SpecHash(again))
}

// An orphaned record's completion is its compensation's, not the time it
// was found orphaned: the object's InSync then says what the compensation
// did, not what the record said while it was under way.
func TestJournalCompensatedCompletesWhenCompensated(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	c := fake.NewClientBuilder().WithScheme(scheme).Build()
	orphaned := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(orphaned)
	j := &Journal{Client: c, Clock: clk}
	si := &v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "team", UID: "uid-1", Generation: 2}}
	op, err := begin(context.Background(), j, Intent{ID: "0b6c5e2a-1111-2222-3333-444455556666", Target: si, Kind: "ServiceInstance",
		ExternalID: "ext-1", Broker: "acme", Verb: v1alpha1.VerbUpdate, User: authenticationv1.UserInfo{Username: "alice"}})
	require.NoError(t, err)
	require.NoError(t, j.SetPhase(context.Background(), op, nil, Answer{Phase: v1alpha1.PhaseOrphaned}))
	failedAgain := metav1.NewTime(orphaned.Add(30 * time.Second))
	clk.SetTime(failedAgain.Time)
	require.NoError(t, j.SetPhase(context.Background(), op, nil, Answer{Phase: v1alpha1.PhaseOrphaned,
		InSync: &v1alpha1.InSyncNote{Status: metav1.ConditionFalse, Reason: "CompensationFailed"}}))
	assert.Equal(t, orphaned, op.Status.CompletionTime.Time.UTC(), "still under way")

	compensated := orphaned.Add(time.Minute)
	clk.SetTime(compensated)
	require.NoError(t, j.SetPhase(context.Background(), op, nil, Answer{Phase: v1alpha1.PhaseCompensated,
		InSync: &v1alpha1.InSyncNote{Status: metav1.ConditionTrue, Reason: "Compensated"}}))
	assert.Equal(t, compensated, op.Status.CompletionTime.Time.UTC())

	conds := []metav1.Condition{{Type: v1alpha1.ConditionInSync, Status: metav1.ConditionFalse, Reason: "CompensationFailed", LastTransitionTime: failedAgain}}
	ApplyNotes(&conds, nil, false, []v1alpha1.BrokerOperation{*op})
	assert.Equal(t, "Compensated", conds[0].Reason, "the compensation's note replaces the failed attempt's")
}

// begin writes the record of an operation without its answer, as a
// record restored from its lock is.
func begin(ctx context.Context, j *Journal, in Intent) (*v1alpha1.BrokerOperation, error) {
	op := j.Draft(in)
	if err := j.Write(ctx, op); err != nil {
		return nil, err
	}
	return op, nil
}
