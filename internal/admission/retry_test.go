package admission

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/journal"
)

// The API server asks the webhooks again when it retries a request whose
// write conflicted in etcd. The broker already carried the change out, and
// the lock is still held until the operations reconciler commits it.
func TestIdenticalRetryIsAllowedWithoutASecondBrokerCall(t *testing.T) {
	h := newHarness(t)
	si := instance("small", `{"region":"eu"}`)
	_, err := h.admit(admissionv1.Create, nil, si, false)
	require.NoError(t, err)

	t.Run("answer written: read from the journal", func(t *testing.T) {
		_, err := h.admit(admissionv1.Create, nil, si, false)
		require.NoError(t, err)
		assert.Equal(t, 1, h.broker.Count(fakebroker.OpProvision))
	})

	t.Run("another change waits for the lock, then is refused", func(t *testing.T) {
		_, err := h.admit(admissionv1.Create, nil, instance("large", `{"region":"eu"}`), false)
		require.Error(t, err)
		var status apierrors.APIStatus
		require.ErrorAs(t, err, &status)
		assert.Equal(t, int32(http.StatusConflict), status.Status().Code)
		assert.Contains(t, err.Error(), "another change of instance \"db\" is in flight at the broker")
		assert.Equal(t, 1, h.broker.Count(fakebroker.OpProvision))
	})
	assert.Len(t, h.records(t), 1, "the retries write no record")
}

// The API server's retry may reach another replica while the replica that
// carried the change out is still writing its answer: the record still
// reads Pending there. The holder cannot finish (its commit waits for this
// very retry to be allowed), so the retry looks again while it waits for
// the lock, and is allowed once the answer is written, without a second
// broker call.
func TestIdenticalRetryOnAnotherReplicaWaitsForTheAnswer(t *testing.T) {
	h := newHarness(t)
	h.leases.Wait = 5 * time.Second
	si := instance("small", `{"region":"eu"}`)
	other := &journal.Journal{Client: h.client}
	rec := other.Draft(journal.Intent{ID: "first", Target: si, Kind: v1alpha1.KindServiceInstance, ExternalID: "ext-1",
		Broker: "acme", Verb: v1alpha1.VerbProvision, User: authenticationv1.UserInfo{Username: "alice"}, SpecHash: journal.SpecHash(si.Spec)})
	require.NoError(t, other.Write(context.Background(), rec)) // without its answer
	_, ok, err := h.leases.Acquire(context.Background(), journal.Key{Kind: v1alpha1.KindServiceInstance, Namespace: "team", Name: "db", ExternalID: "ext-1"},
		&journal.Operation{Verb: v1alpha1.VerbProvision, User: "alice", Record: rec.Name, Started: time.Now()})
	require.NoError(t, err)
	require.True(t, ok)
	go func() {
		time.Sleep(200 * time.Millisecond) // the other replica writes its answer
		_ = other.SetPhase(context.Background(), rec, si, journal.Answer{Phase: v1alpha1.PhaseSucceeded})
	}()

	start := time.Now()
	_, err = h.admit(admissionv1.Create, nil, si, false)
	require.NoError(t, err, "the retry of a change the broker carried out is allowed")
	assert.GreaterOrEqual(t, time.Since(start), 200*time.Millisecond, "allowed once the answer was written")
	assert.Zero(t, h.broker.Count(fakebroker.OpProvision), "without a second broker call")
	assert.Len(t, h.records(t), 1, "the retry writes no record")
}
