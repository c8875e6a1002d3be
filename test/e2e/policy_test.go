package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
)

// TestDetachOnDeleteLeavesTheBrokerInstance: under detach-on-delete,
// changes still go to the broker, and a delete only removes the object.
func TestDetachOnDeleteLeavesTheBrokerInstance(t *testing.T) {
	b := freshBroker(t)
	ns := namespace(t)
	require.Equal(t, 0, kubectl(t, instanceWith(ns, "db", "small", ns+"-db", ""), "apply", "-f", "-").ExitCode)
	r := kubectl(t, "", "annotate", "serviceinstance", "db", "-n", ns, "lockstep.dev/reconcile-policy=detach-on-delete")
	require.Equal(t, 0, r.ExitCode, r.Output())
	r = kubectl(t, "", "patch", "serviceinstance", "db", "-n", ns, "--type=merge", "-p", `{"spec":{"planName":"large"}}`)
	require.Equal(t, 0, r.ExitCode, r.Output())
	held, _ := b.Instance(ns + "-db")
	assert.Equal(t, fakebroker.PlanLargeID, held.PlanID, "changes still go to the broker")

	r = kubectl(t, "", "delete", "serviceinstance", "db", "-n", ns)
	require.Equal(t, 0, r.ExitCode, r.Output())
	assert.Contains(t, r.Stderr, `Warning: serviceinstance "db" is deleted without its broker (lockstep.dev/reconcile-policy=detach-on-delete): the broker keeps what it holds`)
	require.Eventually(t, func() bool { return !instanceExists(t, ns, "db") }, 10*time.Second, 50*time.Millisecond)
	_, still := b.Instance(ns + "-db")
	assert.True(t, still, "the broker keeps the instance")
	assert.Zero(t, b.Count(fakebroker.OpDeprovision))
	op := operationPhase(t, ns, "db", v1alpha1.VerbDetach, v1alpha1.PhaseCommitted)
	assert.Equal(t, "alice", op.Spec.Requester.Username, "the journal says who let go of it")
}

// TestObserveRefusesChangesAndAdoptionBringsAnInstanceIn: an instance made
// at the broker behind lockstep's back is adopted under observe; its spec
// cannot change; with manage it can; adoption is refused for every reason
// with a message that says what to do.
func TestObserveRefusesChangesAndAdoptionBringsAnInstanceIn(t *testing.T) {
	b := freshBroker(t)
	ns := namespace(t)
	b.PutInstance(fakebroker.Instance{ID: ns + "-legacy", ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID,
		Parameters: map[string]any{"storageGB": 5.0}})
	adopt := func(plan, params, policy string) string {
		return fmt.Sprintf(`apiVersion: lockstep.dev/v1alpha1
kind: ServiceInstance
metadata:
  name: legacy
  namespace: %s
  annotations: {lockstep.dev/adopt: "true", lockstep.dev/reconcile-policy: %s}
spec: {brokerName: acme, serviceName: db, planName: %s, externalID: %s-legacy, parameters: %s}
`, ns, policy, plan, ns, params)
	}

	r := kubectl(t, adopt("large", `{"storageGB": 5}`, "observe"), "apply", "-f", "-")
	require.NotEqual(t, 0, r.ExitCode)
	assert.Contains(t, r.Stderr, `instance "legacy" cannot adopt "`+ns+`-legacy": broker "acme" holds it with plan "small" (the spec says "large"); nothing was created`)
	r = kubectl(t, adopt("small", `{"storageGB": 6}`, "observe"), "apply", "-f", "-")
	require.NotEqual(t, 0, r.ExitCode)
	assert.Contains(t, r.Stderr, `holds it with parameters {"storageGB":5} (the spec says {"storageGB":6})`)
	r = kubectl(t, fmt.Sprintf(`apiVersion: lockstep.dev/v1alpha1
kind: ServiceInstance
metadata: {name: ghost, namespace: %s, annotations: {lockstep.dev/adopt: "true"}}
spec: {brokerName: acme, serviceName: db, planName: small, externalID: %s-ghost}
`, ns, ns), "apply", "-f", "-")
	require.NotEqual(t, 0, r.ExitCode)
	assert.Contains(t, r.Stderr, `broker "acme" holds no instance with this id; nothing was created`)
	assert.False(t, instanceExists(t, ns, "legacy"))

	r = kubectl(t, adopt("small", `{"storageGB": 5}`, "observe"), "apply", "-f", "-")
	require.Equal(t, 0, r.ExitCode, r.Output())
	si := getInstance(t, ns, "legacy")
	require.Eventually(t, func() bool {
		require.NoError(t, cluster.client.Get(context.Background(), client.ObjectKeyFromObject(si), si))
		return meta.IsStatusConditionTrue(si.Status.Conditions, v1alpha1.ConditionReady)
	}, 10*time.Second, 50*time.Millisecond, "the adopted instance is Ready")
	assert.Equal(t, "Adopted", meta.FindStatusCondition(si.Status.Conditions, v1alpha1.ConditionReady).Reason)
	assert.Zero(t, b.Count(fakebroker.OpProvision), "adoption provisions nothing")

	r = kubectl(t, "", "patch", "serviceinstance", "legacy", "-n", ns, "--type=merge", "-p", `{"spec":{"parameters":{"storageGB":7}}}`)
	require.NotEqual(t, 0, r.ExitCode)
	assert.Contains(t, r.Stderr, `serviceinstance "legacy" is observed (lockstep.dev/reconcile-policy=observe): lockstep never changes it at the broker`)
	assert.Contains(t, r.Stderr, "kubectl annotate serviceinstance legacy -n "+ns+" lockstep.dev/reconcile-policy=manage --overwrite")
	assert.Zero(t, b.Count(fakebroker.OpUpdate))

	r = kubectl(t, "", "annotate", "serviceinstance", "legacy", "-n", ns, "lockstep.dev/reconcile-policy=manage", "--overwrite")
	require.Equal(t, 0, r.ExitCode, r.Output())
	retried(t, "", "patch", "serviceinstance", "legacy", "-n", ns, "--type=merge", "-p", `{"spec":{"parameters":{"storageGB":7}}}`)
	held, _ := b.Instance(ns + "-legacy")
	assert.Equal(t, map[string]any{"storageGB": 7.0}, held.Parameters, "managed now: the change went to the broker")
}
