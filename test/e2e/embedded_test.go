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
)

// TestEmbeddedBroker drives lockstep's own broker, serving the sample
// bundles, through the whole life of an instance and a binding.
func TestEmbeddedBroker(t *testing.T) {
	require.Eventually(t, func() bool {
		var sb v1alpha1.ServiceBroker
		err := cluster.client.Get(context.Background(), client.ObjectKey{Name: "embedded"}, &sb)
		return err == nil && meta.IsStatusConditionTrue(sb.Status.Conditions, v1alpha1.ConditionReady)
	}, 30*time.Second, 200*time.Millisecond, "the embedded broker registers itself and its catalog loads")

	ns := namespace(t)
	plans := map[string]string{"quick": "small", "failing": "default"}
	instance := func(service, params string) string {
		return fmt.Sprintf(`apiVersion: lockstep.dev/v1alpha1
kind: ServiceInstance
metadata: {name: %s, namespace: %s}
spec: {brokerName: embedded, serviceName: %s, planName: %s, parameters: %s}
`, service, ns, service, plans[service], params)
	}
	r := kubectl(t, instance("quick", `{"size": 2, "region": "eu"}`), "apply", "-f", "-")
	require.Equal(t, 0, r.ExitCode, r.Output())

	r = kubectl(t, instance("quick", `{"size": 2, "region": "us"}`), "apply", "-f", "-")
	assert.NotEqual(t, 0, r.ExitCode)
	assert.Contains(t, r.Stderr, "spec.parameters.region", "create-only parameter from the bundle's schemas")

	r = kubectl(t, fmt.Sprintf(`apiVersion: lockstep.dev/v1alpha1
kind: ServiceBinding
metadata: {name: quick-creds, namespace: %s}
spec: {instanceName: quick, parameters: {role: read}}
`, ns), "apply", "-f", "-")
	require.Equal(t, 0, r.ExitCode, r.Output())
	s, ok := getSecret(t, ns, "quick-creds")
	require.True(t, ok)
	assert.NotEmpty(t, s.Data)

	r = kubectl(t, instance("failing", `{}`), "apply", "-f", "-")
	require.Equal(t, 0, r.ExitCode, r.Output())
	r = kubectl(t, instance("failing", `{"refuse": "update"}`), "apply", "-f", "-")
	assert.NotEqual(t, 0, r.ExitCode, "the update lock: the bundle's update action refuses")
	assert.Contains(t, r.Stderr, `broker "embedded"`)
	assert.Equal(t, "{}", string(getInstance(t, ns, "failing").Spec.Parameters.Raw))

	require.Equal(t, 0, kubectl(t, "", "delete", "servicebinding", "quick-creds", "-n", ns, "--timeout=30s").ExitCode)
	require.Equal(t, 0, kubectl(t, "", "delete", "serviceinstance", "quick", "failing", "-n", ns, "--timeout=30s").ExitCode)
}
