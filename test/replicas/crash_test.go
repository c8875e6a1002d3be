package replicas

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/journal"
)

func namespace(t *testing.T) string {
	t.Helper()
	name := "rep-" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	require.NoError(t, env.client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}))
	return name
}

func instance(ns, plan string) *v1alpha1.ServiceInstance {
	return &v1alpha1.ServiceInstance{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns},
		Spec:       v1alpha1.ServiceInstanceSpec{BrokerName: "acme", ServiceName: "db", PlanName: plan, ExternalID: ns + "-db"},
	}
}

func TestCrashMidOperation(t *testing.T) {
	first := startReplica(t, "first")
	waitBrokerReady(t)
	ns := namespace(t)
	// A provision that outlasts the admission budget, then finishes.
	env.broker.ScriptInstance(fakebroker.OpProvision, ns+"-db", fakebroker.Respond{Async: &fakebroker.Async{InProgressPolls: 80}})

	si := instance(ns, "small")
	require.NoError(t, env.client.Create(context.Background(), si), "allowed with a warning: still in progress")
	var op v1alpha1.BrokerOperation
	require.Eventually(t, func() bool {
		var ops v1alpha1.BrokerOperationList
		require.NoError(t, env.client.List(context.Background(), &ops, client.InNamespace(ns)))
		if len(ops.Items) == 1 && ops.Items[0].Status.Phase == v1alpha1.PhaseInProgress {
			op = ops.Items[0]
			return true
		}
		return false
	}, 10*time.Second, 50*time.Millisecond)

	first.kill() // the webhook process stops while the broker still works
	second := startReplica(t, "second")
	_ = second

	require.Eventually(t, func() bool {
		require.NoError(t, env.client.Get(context.Background(), client.ObjectKeyFromObject(si), si))
		return meta.IsStatusConditionTrue(si.Status.Conditions, v1alpha1.ConditionReady)
	}, 60*time.Second, 100*time.Millisecond, "the new process picks the operation up; status becomes Ready")
	// The commit writes the status first, then the record's phase, then
	// releases the lock.
	require.Eventually(t, func() bool {
		require.NoError(t, env.client.Get(context.Background(), client.ObjectKeyFromObject(&op), &op))
		err := env.client.Get(context.Background(), client.ObjectKey{Namespace: "lockstep-system", Name: journal.KeyOf(v1alpha1.KindServiceInstance, si).LeaseName()}, &coordinationv1.Lease{})
		return op.Status.Phase == v1alpha1.PhaseCommitted && apierrors.IsNotFound(err)
	}, 10*time.Second, 50*time.Millisecond, "the operation is committed and the lock released")
	held, ok := env.broker.Instance(ns + "-db")
	require.True(t, ok)
	assert.Equal(t, fakebroker.PlanSmallID, held.PlanID)
}
