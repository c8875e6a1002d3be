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

// TestABindingNamesAnInstanceOfATypedKind: through kubectl, an object of
// typed kind Db is created (provisioned during admission) and lockstep's
// reconciler of the kind, started once its CRD was established, shows it
// ready. A ServiceBinding names it with spec.instanceKind: kubectl binds it
// at the broker, under the typed object's external id, writes the Secret
// and shows the binding ready; the bind's record names the instance. A
// binding of a kind that does not exist, or of a ServiceInstance of that
// name, is refused, saying what to do; the bound object cannot be deleted
// while the binding lives. Unbound, the object is deleted, and the
// reconciler lets it go.
func TestABindingNamesAnInstanceOfATypedKind(t *testing.T) {
	ctx := context.Background()
	kind := installTypedKind(t, fakebroker.ServiceDB)
	gvk := kind.GVK
	b := freshBroker(t)
	ns := namespace(t)
	r := kubectl(t, typedManifest(gvk.Kind, ns, "db", "small", `{"storageGB": 10}`), "apply", "-f", "-")
	require.Equal(t, 0, r.ExitCode, r.Output())
	si := controllertest.ReadyTyped(t, cluster.client, kind, ns, "db")
	assert.Equal(t, "Provisioned", meta.FindStatusCondition(si.Status.Conditions, v1alpha1.ConditionReady).Reason)

	r = kubectl(t, typedBindingYAML(ns, "nope", "Nope", "db", ns+"-nope"), "apply", "-f", "-")
	assert.NotEqual(t, 0, r.ExitCode)
	assert.Contains(t, r.Stderr, "spec.instanceKind: Invalid value: \"Nope\": no typed kind of this name")
	r = kubectl(t, bindingYAML(ns, "plain", "db", ns+"-plain", ""), "apply", "-f", "-")
	assert.NotEqual(t, 0, r.ExitCode)
	assert.Contains(t, r.Stderr, "no ServiceInstance of this name in namespace")

	r = kubectl(t, typedBindingYAML(ns, "creds", gvk.Kind, "db", ns+"-creds"), "apply", "-f", "-")
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

	r = kubectl(t, "", "delete", "db", "db", "-n", ns, "--wait=false")
	assert.NotEqual(t, 0, r.ExitCode)
	assert.Contains(t, r.Stderr, `Db "db" still has 1 binding(s): creds`)

	r = kubectl(t, "", "delete", "servicebinding", "creds", "-n", ns)
	require.Equal(t, 0, r.ExitCode, r.Output())
	assert.Equal(t, 1, b.Count(fakebroker.OpUnbind))
	_, ok = getSecret(t, ns, "creds")
	assert.False(t, ok, "the Secret is gone")

	r = kubectl(t, "", "delete", "db", "db", "-n", ns, "--timeout=30s")
	require.Equal(t, 0, r.ExitCode, "the reconciler lets the deleted object go: %s", r.Output())
	assert.Equal(t, 1, b.Count(fakebroker.OpDeprovision))
}
