package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/osbclient"
)

// quickPlans are the OSB ids of the embedded broker's sample service
// "quick" (examples/bundles/quick/bundle.json).
const (
	quickServiceID = "4f6a3c1e-6b0e-4a55-9d7e-1c2b3a4d5e01"
	quickSmallID   = "4f6a3c1e-6b0e-4a55-9d7e-1c2b3a4d5e11"
	quickLargeID   = "4f6a3c1e-6b0e-4a55-9d7e-1c2b3a4d5e12"
)

// embeddedClient talks OSB to the embedded broker directly, behind
// lockstep's back, as another platform or an operator by hand would.
func embeddedClient(t *testing.T) *osbclient.Client {
	t.Helper()
	var sb v1alpha1.ServiceBroker
	require.Eventually(t, func() bool {
		err := cluster.client.Get(context.Background(), client.ObjectKey{Name: "embedded"}, &sb)
		return err == nil && meta.IsStatusConditionTrue(sb.Status.Conditions, v1alpha1.ConditionReady)
	}, 30*time.Second, 200*time.Millisecond, "the embedded broker registers itself and its catalog loads")
	c, err := osbclient.New(osbclient.Config{URL: sb.Spec.URL})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// inSyncReads waits until kubectl shows the instance's InSync condition
// with reason, and returns its message.
func inSyncReads(t *testing.T, ns, name, reason string) string {
	t.Helper()
	var msg string
	require.Eventually(t, func() bool {
		r := kubectl(t, "", "get", "serviceinstance", name, "-n", ns, "-o",
			`jsonpath={.status.conditions[?(@.type=="InSync")].reason}{"|"}{.status.conditions[?(@.type=="InSync")].message}`)
		got, rest, _ := strings.Cut(r.Stdout, "|")
		msg = rest
		return got == reason
	}, 3*resyncInterval+5*time.Second, 100*time.Millisecond, "InSync becomes %s within one resync period", reason)
	return msg
}

func TestResyncFindsDriftAtTheEmbeddedBroker(t *testing.T) {
	osb := embeddedClient(t)
	ns := namespace(t)
	instance := func(name, policy string) string {
		annotations := ""
		if policy != "" {
			annotations = fmt.Sprintf("\n  annotations: {%s: %s}", v1alpha1.AnnotationReconcilePolicy, policy)
		}
		return fmt.Sprintf(`apiVersion: lockstep.dev/v1alpha1
kind: ServiceInstance
metadata:
  name: %s
  namespace: %s%s
spec: {brokerName: embedded, serviceName: quick, planName: small, parameters: {size: 2, region: eu}}
`, name, ns, annotations)
	}
	externalID := func(name string) string { return getInstance(t, ns, name).Spec.ExternalID }
	behindTheBack := func(name string, req osbclient.UpdateRequest) {
		t.Helper()
		req.InstanceID, req.ServiceID = externalID(name), quickServiceID
		_, err := osb.Update(context.Background(), osbclient.RequestMeta{}, req)
		require.NoError(t, err)
	}

	t.Run("parameters changed under manage are set back", func(t *testing.T) {
		require.Equal(t, 0, kubectl(t, instance("managed", ""), "apply", "-f", "-").ExitCode)
		inSyncReads(t, ns, "managed", "Committed")
		behindTheBack("managed", osbclient.UpdateRequest{Parameters: json.RawMessage(`{"size": 5}`)})

		// The correction is quick at this broker: read what happened in
		// the events and the journal, and at the broker.
		held := func() json.RawMessage {
			got, err := osb.GetInstance(context.Background(), osbclient.RequestMeta{}, osbclient.GetInstanceRequest{InstanceID: externalID("managed")})
			require.NoError(t, err)
			return got.Parameters
		}
		require.Eventually(t, func() bool {
			r := kubectl(t, "", "get", "events", "-n", ns, "--field-selector", "involvedObject.name=managed,reason=ParametersDrift", "-o", "jsonpath={.items[*].message}")
			return strings.Contains(r.Stdout, "parameters differ: size (broker: 5, here: 2)") &&
				strings.Contains(r.Stdout, "lockstep re-applies this object's spec at the broker")
		}, 3*resyncInterval+5*time.Second, 100*time.Millisecond, "the drift is found within one resync period and shown as an event")
		require.Eventually(t, func() bool { return string(held()) != "" && jsonEqual(held(), `{"size": 2, "region": "eu"}`) },
			10*time.Second, 100*time.Millisecond, "the broker holds the persisted spec again")
		inSyncReads(t, ns, "managed", "Committed")

		r := kubectl(t, "", "get", "brokeroperations", "-n", ns, "-o", `jsonpath={range .items[?(@.spec.verb=="update")]}{.spec.requester.username}{"\n"}{end}`)
		require.Equal(t, 0, r.ExitCode, r.Output())
		assert.NotEmpty(t, strings.TrimSpace(r.Stdout), "the correction is journaled")
		assert.NotContains(t, r.Stdout, "alice", "asked by lockstep itself, not by the user")
	})

	t.Run("plan changed under observe is reported only", func(t *testing.T) {
		require.Equal(t, 0, kubectl(t, instance("watched", ""), "apply", "-f", "-").ExitCode)
		require.Equal(t, 0, kubectl(t, "", "annotate", "serviceinstance", "watched", "-n", ns,
			v1alpha1.AnnotationReconcilePolicy+"=observe").ExitCode)
		behindTheBack("watched", osbclient.UpdateRequest{PlanID: quickLargeID, Parameters: json.RawMessage(`{"size": 20}`)})

		msg := inSyncReads(t, ns, "watched", "PlanDrift")
		assert.Contains(t, msg, `plan is "large" at the broker, "small" here`)
		assert.Contains(t, msg, "size (broker: 20, here: 2)")
		assert.Contains(t, msg, "reconcile policy observe: lockstep reports it and changes nothing")
		r := kubectl(t, "", "get", "serviceinstance", "watched", "-n", ns, "-o", "wide")
		assert.Contains(t, r.Stdout, "PlanDrift", "kubectl get -o wide shows why it is not in sync")
		r = kubectl(t, "", "describe", "serviceinstance", "watched", "-n", ns)
		assert.Contains(t, r.Stdout, "PlanDrift", "an event says so too")

		held, err := osb.GetInstance(context.Background(), osbclient.RequestMeta{}, osbclient.GetInstanceRequest{InstanceID: externalID("watched")})
		require.NoError(t, err)
		assert.Equal(t, quickLargeID, held.PlanID, "observe never changes the broker")
	})

	t.Run("gone at the broker", func(t *testing.T) {
		require.Equal(t, 0, kubectl(t, instance("lost", ""), "apply", "-f", "-").ExitCode)
		_, err := osb.Deprovision(context.Background(), osbclient.RequestMeta{}, osbclient.DeprovisionRequest{
			InstanceID: externalID("lost"), ServiceID: quickServiceID, PlanID: quickSmallID})
		require.NoError(t, err)

		msg := inSyncReads(t, ns, "lost", "GoneAtBroker")
		assert.Contains(t, msg, `broker "embedded" no longer holds instance "lost"`)
		si := getInstance(t, ns, "lost")
		assert.False(t, meta.IsStatusConditionTrue(si.Status.Conditions, v1alpha1.ConditionReady), "not ready")
		r := kubectl(t, "", "delete", "serviceinstance", "lost", "-n", ns, "--timeout=30s")
		assert.Equal(t, 0, r.ExitCode, "the way out the message names works: %s", r.Output())
	})

	require.Equal(t, 0, kubectl(t, "", "delete", "serviceinstance", "managed", "watched", "-n", ns, "--timeout=30s").ExitCode)
}

// TestResyncOfABindingGoneAtItsBroker: a binding the broker no longer
// holds says so; its credentials appear nowhere but its Secret.
func TestResyncOfABindingGoneAtItsBroker(t *testing.T) {
	b, ns := boundInstance(t)
	r := kubectl(t, bindingYAML(ns, "creds", "db", ns+"-creds", ""), "apply", "-f", "-")
	require.Equal(t, 0, r.ExitCode, r.Output())
	held, ok := b.Binding(ns+"-db", ns+"-creds")
	require.True(t, ok)
	b.RemoveBinding(ns+"-db", ns+"-creds")

	var msg string
	require.Eventually(t, func() bool {
		r := kubectl(t, "", "get", "servicebinding", "creds", "-n", ns, "-o",
			`jsonpath={.status.conditions[?(@.type=="InSync")].reason}{"|"}{.status.conditions[?(@.type=="InSync")].message}`)
		reason, rest, _ := strings.Cut(r.Stdout, "|")
		msg = rest
		return reason == "GoneAtBroker"
	}, 3*resyncInterval+5*time.Second, 100*time.Millisecond)
	assert.Contains(t, msg, `broker "acme" no longer holds binding "creds"`)
	r = kubectl(t, "", "get", "servicebinding", "creds", "-n", ns, "-o", "yaml")
	for _, v := range held.Credentials {
		assert.NotContains(t, r.Stdout, fmt.Sprint(v), "no credential in the binding")
	}
}

func jsonEqual(a json.RawMessage, b string) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal([]byte(b), &y) == nil && fmt.Sprint(x) == fmt.Sprint(y)
}
