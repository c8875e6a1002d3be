package replicas

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
)

// leading is what a replica logs once it leads.
const leading = "leading: the operations and finalizer reconcilers run in this replica"

// waitLeader waits until one of the replicas leads (a lead left by a
// replica killed before expires first), and returns it.
func waitLeader(t *testing.T, replicas ...*replica) *replica {
	t.Helper()
	var leader *replica
	require.Eventually(t, func() bool {
		for _, r := range replicas {
			if r.logged(leading) {
				leader = r
				return true
			}
		}
		return false
	}, 30*time.Second, 100*time.Millisecond, "no replica took the lead")
	return leader
}

func (r *replica) logged(s string) bool { return r.Logged(s) }

// TestOneLeaderFollowsOperationsAndAnotherTakesOver: with two replicas, only
// the leader runs the reconcilers that change state (both serve the
// webhooks and load the catalog); when the leader dies in the middle of an
// asynchronous provision, the other takes the lead and finishes it.
func TestOneLeaderFollowsOperationsAndAnotherTakesOver(t *testing.T) {
	a := startReplica(t, "leader-a")
	b := startReplica(t, "leader-b")
	waitBrokerReady(t)
	leader := waitLeader(t, a, b)
	follower := a
	if leader == a {
		follower = b
	}
	assert.False(t, follower.logged(leading), "exactly one replica leads")

	ns := namespace(t)
	env.broker.ScriptInstance(fakebroker.OpProvision, ns+"-db", fakebroker.Respond{Async: &fakebroker.Async{InProgressPolls: 1 << 20}})
	si := instance(ns, "small")
	require.NoError(t, env.client.Create(context.Background(), si), "allowed with a warning: still in progress")
	require.Eventually(t, func() bool {
		var ops v1alpha1.BrokerOperationList
		require.NoError(t, env.client.List(context.Background(), &ops, client.InNamespace(ns)))
		return len(ops.Items) == 1 && ops.Items[0].Status.Phase == v1alpha1.PhaseInProgress
	}, 10*time.Second, 50*time.Millisecond)
	require.Eventually(t, func() bool {
		return leader.logged(`"controller": "brokeroperation"`) || leader.logged(`controller="brokeroperation"`) || leader.logged("brokeroperation")
	},
		10*time.Second, 100*time.Millisecond, "the leader runs the operations reconciler")
	assert.False(t, follower.logged(`"controller": "brokeroperation"`), "the other replica never starts the operations reconciler")
	for _, c := range []string{"serviceinstance", "servicebinding"} {
		assert.True(t, leader.logged(`"controller": "`+c+`"`), "the leader runs the %s controller (status, resync, finalizers)", c)
		assert.False(t, follower.logged(`"controller": "`+c+`"`), "the other replica never resyncs or compensates: no %s controller", c)
	}
	assert.True(t, follower.logged(`"controller": "servicebroker"`), "but it loads the catalog, for its own admission")

	leader.kill() // the leader dies while the broker still works
	env.broker.Finish()
	require.Eventually(t, func() bool { return follower.logged(leading) }, 30*time.Second, 100*time.Millisecond,
		"the other replica takes the lead within the lease duration")
	require.Eventually(t, func() bool {
		require.NoError(t, env.client.Get(context.Background(), client.ObjectKeyFromObject(si), si))
		return meta.IsStatusConditionTrue(si.Status.Conditions, v1alpha1.ConditionReady)
	}, 30*time.Second, 100*time.Millisecond, "the new leader finishes the in-flight provision")
	_, held := env.broker.Instance(ns + "-db")
	assert.True(t, held)
}
