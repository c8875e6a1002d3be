package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
)

// setPreflight sets spec.preflight of ServiceBroker acme, as an
// administrator does, and waits until lockstep has read it (its access
// rules condition observed the new generation); the test's end unsets it.
func setPreflight(t *testing.T, on *bool) {
	t.Helper()
	set := func(on *bool) {
		var sb v1alpha1.ServiceBroker
		require.NoError(t, cluster.client.Get(context.Background(), client.ObjectKey{Name: brokerName}, &sb))
		sb.Spec.Preflight = on
		require.NoError(t, cluster.client.Update(context.Background(), &sb))
		require.Eventually(t, func() bool {
			require.NoError(t, cluster.client.Get(context.Background(), client.ObjectKey{Name: brokerName}, &sb))
			c := meta.FindStatusCondition(sb.Status.Conditions, v1alpha1.ConditionAccessRules)
			return c != nil && c.ObservedGeneration == sb.Generation
		}, 20*time.Second, 100*time.Millisecond, "lockstep read spec.preflight of ServiceBroker %s", brokerName)
	}
	set(on)
	t.Cleanup(func() { set(nil) })
}

// TestPreflightRefusesWhatAnotherWebhookRefusesBeforeTheBroker: a second
// validating webhook (another server's) refuses every create and update
// of lockstep's kinds that carry a label. With the preflight on for the
// broker, a create, an update and a bind it would refuse are refused
// through kubectl with its words, and the broker gets no request: lockstep tried each first as a dry run. What it allows goes
// through, and so does a delete (the other webhook does not look at
// deletes). With the preflight off, the same create reaches the broker
// and is undone after the API server refused it (compensation).
func TestPreflightRefusesWhatAnotherWebhookRefusesBeforeTheBroker(t *testing.T) {
	installRejecter(t)
	b := freshBroker(t)
	ns := namespace(t)
	t.Cleanup(func() {
		kubectl(t, "", "delete", "servicebindings", "--all", "-n", ns, "--timeout=30s")
		kubectl(t, "", "delete", "serviceinstances", "--all", "-n", ns, "--timeout=30s")
	})
	labelled := func(manifest string) string {
		return strings.Replace(manifest, "metadata:\n", fmt.Sprintf("metadata:\n  labels: {%s: \"true\"}\n", rejectLabel), 1)
	}
	// The API server calls both webhooks at once and answers with the
	// first refusal it gets: the other webhook's own, or lockstep's, which
	// quotes it (lockstep's preflight got it too).
	preflightRefused := func(t *testing.T, r result) {
		t.Helper()
		require.NotEqual(t, 0, r.ExitCode, r.Output())
		assert.Contains(t, r.Stderr, "rejected by the e2e test's second webhook")
	}
	journaled := func(t *testing.T, name string) []v1alpha1.BrokerOperation {
		t.Helper()
		var ops v1alpha1.BrokerOperationList
		require.NoError(t, cluster.client.List(context.Background(), &ops, client.InNamespace(ns)))
		var of []v1alpha1.BrokerOperation
		for _, op := range ops.Items {
			if op.Spec.Target.Name == name {
				of = append(of, op)
			}
		}
		return of
	}

	t.Run("on", func(t *testing.T) {
		setPreflight(t, new(true))
		b.ResetCalls()

		t.Run("a create is refused with no broker request", func(t *testing.T) {
			preflightRefused(t, kubectl(t, labelled(instanceWith(ns, "refused", "small", ns+"-refused", "")), "apply", "-f", "-"))
			assert.False(t, instanceExists(t, ns, "refused"))
			for _, c := range b.Calls() {
				assert.NotEqual(t, ns+"-refused", c.InstanceID, "the broker got %s %s", c.Op, c.Path)
			}
			assert.Zero(t, b.Count(fakebroker.OpProvision), "the broker got no provision")
			assert.Empty(t, journaled(t, "refused"), "nothing journaled")
		})
		t.Run("what the other webhook allows goes through", func(t *testing.T) {
			r := kubectl(t, instanceWith(ns, "db", "small", ns+"-db", ""), "apply", "-f", "-")
			require.Equal(t, 0, r.ExitCode, r.Output())
			assert.Equal(t, 1, b.Count(fakebroker.OpProvision))
		})
		t.Run("an update is refused with no broker request", func(t *testing.T) {
			preflightRefused(t, kubectl(t, labelled(instanceWith(ns, "db", "large", ns+"-db", "")), "apply", "-f", "-"))
			assert.Equal(t, "small", getInstance(t, ns, "db").Spec.PlanName)
			assert.Zero(t, b.Count(fakebroker.OpUpdate), "the broker got no update")
			held, _ := b.Instance(ns + "-db")
			assert.Equal(t, fakebroker.PlanSmallID, held.PlanID)
		})
		t.Run("a bind is refused with no broker request", func(t *testing.T) {
			require.Eventually(t, func() bool {
				return meta.IsStatusConditionTrue(getInstance(t, ns, "db").Status.Conditions, v1alpha1.ConditionReady)
			}, 30*time.Second, 100*time.Millisecond, "the instance is ready to bind")
			preflightRefused(t, kubectl(t, labelled(bindingYAML(ns, "creds", "db", ns+"-creds", "")), "apply", "-f", "-"))
			assert.False(t, bindingExists(t, ns, "creds"))
			assert.Zero(t, b.Count(fakebroker.OpBind), "the broker got no bind")
			_, found := getSecret(t, ns, "creds")
			assert.False(t, found, "no credentials")
		})
		t.Run("a delete the other webhook does not judge goes through", func(t *testing.T) {
			r := kubectl(t, "", "delete", "serviceinstance", "db", "-n", ns, "--timeout=30s")
			require.Equal(t, 0, r.ExitCode, r.Output())
			assert.Equal(t, 1, b.Count(fakebroker.OpDeprovision))
			assert.False(t, instanceExists(t, ns, "db"))
		})
	})

	t.Run("off: provisioned, refused after lockstep, then undone", func(t *testing.T) {
		setPreflight(t, new(false))
		b.ResetCalls()
		r := kubectl(t, labelled(instanceWith(ns, "late", "small", ns+"-late", "")), "apply", "-f", "-")
		require.NotEqual(t, 0, r.ExitCode)
		assert.Contains(t, r.Stderr, "rejected by the e2e test's second webhook")
		assert.NotContains(t, r.Stderr, "preflight")
		assert.Equal(t, 1, b.Count(fakebroker.OpProvision), "lockstep allowed it and the broker provisioned")

		op := operationPhase(t, ns, "late", v1alpha1.VerbProvision, v1alpha1.PhaseCompensated)
		assert.Contains(t, op.Status.Description, "deprovisioned the orphaned instance")
		_, held := b.Instance(ns + "-late")
		assert.False(t, held, "the broker no longer holds it")
	})
}
