package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/controller/controllertest"
)

// typedBindingYAML is a binding manifest of the instance kind/instance.
func typedBindingYAML(ns, name, kind, instance, externalID string) string {
	return fmt.Sprintf(`apiVersion: lockstep.dev/v1alpha1
kind: ServiceBinding
metadata:
  name: %s
  namespace: %s
spec:
  instanceKind: %s
  instanceName: %s
  externalID: %s
`, name, ns, kind, instance, externalID)
}

// TestABindingNamesAnInstanceOfATypedKind: the typed kind of the test
// broker's service "db" is installed, and lockstep reconciles its objects
// (an object is made here as admission leaves it after a provision). A
// ServiceBinding names it with spec.instanceKind: kubectl binds it at the
// broker, under the typed object's external id, writes the Secret and
// shows the binding ready; the bind's record names the instance. A
// binding of a kind that does not exist, or of a ServiceInstance of that
// name, is refused, saying what to do. The unbind goes to the broker.
func TestABindingNamesAnInstanceOfATypedKind(t *testing.T) {
	ctx := context.Background()
	b := freshBroker(t)
	kind, crd := controllertest.InstallTypedKind(t, cluster.client, brokerName)
	defer controllertest.DeleteTypedKind(t, cluster.client, crd)
	ns := namespace(t)
	controllertest.ProvisionedTyped(t, cluster.client, b, kind, ns, "db", nil)
	controllertest.ReadyTyped(t, cluster.client, kind, ns, "db")

	r := kubectl(t, typedBindingYAML(ns, "nope", "Nope", "db", ns+"-nope"), "apply", "-f", "-")
	assert.NotEqual(t, 0, r.ExitCode)
	assert.Contains(t, r.Stderr, "spec.instanceKind: Invalid value: \"Nope\": no typed kind of this name")
	r = kubectl(t, bindingYAML(ns, "plain", "db", ns+"-plain", ""), "apply", "-f", "-")
	assert.NotEqual(t, 0, r.ExitCode)
	assert.Contains(t, r.Stderr, "no ServiceInstance of this name in namespace")

	r = kubectl(t, typedBindingYAML(ns, "creds", kind.GVK.Kind, "db", ns+"-creds"), "apply", "-f", "-")
	require.Equal(t, 0, r.ExitCode, r.Output())
	calls := b.Calls(fakebroker.OpBind)
	require.Len(t, calls, 1, "one bind call")
	assert.Equal(t, "/v2/service_instances/"+ns+"-db/service_bindings/"+ns+"-creds", calls[0].Path)
	_, ok := getSecret(t, ns, "creds")
	assert.True(t, ok, "the Secret exists when kubectl returns")
	require.Eventually(t, func() bool {
		r := kubectl(t, "", "get", "servicebinding", "creds", "-n", ns)
		return strings.Contains(r.Stdout, "True")
	}, 30*time.Second, 200*time.Millisecond, "kubectl get servicebinding shows it ready")

	var ops v1alpha1.BrokerOperationList
	require.NoError(t, cluster.client.List(ctx, &ops, client.InNamespace(ns)))
	var bind *v1alpha1.BrokerOperation
	for i := range ops.Items {
		if ops.Items[i].Spec.Verb == v1alpha1.VerbBind {
			bind = &ops.Items[i]
		}
	}
	require.NotNil(t, bind, "the bind is journaled")
	assert.Equal(t, ns+"-db", bind.Spec.Target.InstanceID, "the record names the typed instance's external id")

	r = kubectl(t, "", "delete", "servicebinding", "creds", "-n", ns)
	require.Equal(t, 0, r.ExitCode, r.Output())
	assert.Equal(t, 1, b.Count(fakebroker.OpUnbind))
	_, ok = getSecret(t, ns, "creds")
	assert.False(t, ok, "the Secret is gone")
}
