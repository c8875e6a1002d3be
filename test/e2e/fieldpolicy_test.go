package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// namespace creates a namespace for one test and returns its name.
func namespace(t *testing.T) string {
	t.Helper()
	name := "e2e-" + strings.ToLower(strings.ReplaceAll(uuid.NewString()[:8], "-", ""))
	require.NoError(t, cluster.client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}))
	return name
}

func instanceYAML(ns, name, service, plan string) string {
	return fmt.Sprintf(`apiVersion: lockstep.dev/v1alpha1
kind: ServiceInstance
metadata:
  name: %s
  namespace: %s
spec:
  brokerName: acme
  serviceName: %s
  planName: %s
`, name, ns, service, plan)
}

func getInstance(t *testing.T, ns, name string) *v1alpha1.ServiceInstance {
	t.Helper()
	si := &v1alpha1.ServiceInstance{}
	require.NoError(t, cluster.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, si))
	return si
}

func TestCreateIsDefaulted(t *testing.T) {
	ns := namespace(t)
	r := kubectl(t, instanceYAML(ns, "db", "db", "small"), "apply", "-f", "-")
	require.Equal(t, 0, r.ExitCode, r.Output())
	assert.Contains(t, r.Stdout, "serviceinstance.lockstep.dev/db created")

	si := getInstance(t, ns, "db")
	_, err := uuid.Parse(si.Spec.ExternalID)
	assert.NoError(t, err, "spec.externalID is defaulted to a UUID, got %q", si.Spec.ExternalID)
	assert.Contains(t, si.Finalizers, v1alpha1.Finalizer)

	r = kubectl(t, "", "get", "serviceinstance", "db", "-n", ns, "-o", "jsonpath={.spec.externalID}")
	assert.Equal(t, si.Spec.ExternalID, r.Stdout)
}

// The API server refuses a create-only change itself, by the CEL rules
// generated from the same tags into the CRDs, before lockstep is called.
func TestCreateOnlyFieldChangeIsRejected(t *testing.T) {
	ns := namespace(t)
	require.Equal(t, 0, kubectl(t, instanceYAML(ns, "db", "db", "small"), "apply", "-f", "-").ExitCode)
	before := getInstance(t, ns, "db")

	t.Run("kubectl apply", func(t *testing.T) {
		r := kubectl(t, instanceYAML(ns, "db", "queue", "standard"), "apply", "-f", "-")
		assert.NotEqual(t, 0, r.ExitCode)
		assert.Contains(t, r.Stderr, `The ServiceInstance "db" is invalid: spec.serviceName: Forbidden: create-only field: `+
			`it cannot be changed after the ServiceInstance is created; delete and recreate the ServiceInstance to change it`)
	})

	t.Run("kubectl patch", func(t *testing.T) {
		r := kubectl(t, "", "patch", "serviceinstance", "db", "-n", ns, "--type=merge",
			"-p", `{"spec":{"externalID":"other-id"}}`)
		assert.NotEqual(t, 0, r.ExitCode)
		assert.Contains(t, r.Stderr, `spec.externalID: Forbidden: create-only field: it cannot be changed after the ServiceInstance is created`)
	})

	t.Run("several violations are reported together", func(t *testing.T) {
		r := kubectl(t, "", "patch", "serviceinstance", "db", "-n", ns, "--type=merge",
			"-p", `{"spec":{"externalID":"other-id","serviceName":"queue","brokerName":"elsewhere"}}`)
		assert.NotEqual(t, 0, r.ExitCode)
		for _, path := range []string{"spec.externalID", "spec.serviceName", "spec.brokerName"} {
			assert.Contains(t, r.Stderr, path)
		}
	})

	t.Run("kubectl apply --dry-run=server", func(t *testing.T) {
		r := kubectl(t, instanceYAML(ns, "db", "queue", "standard"), "apply", "--dry-run=server", "-f", "-")
		assert.NotEqual(t, 0, r.ExitCode)
		assert.Contains(t, r.Stderr, `spec.serviceName: Forbidden: create-only field`)
	})

	after := getInstance(t, ns, "db")
	assert.Equal(t, before.Spec, after.Spec, "nothing changed")
	assert.Equal(t, before.Generation, after.Generation, "the spec was never written")
}

func TestUpdatableFieldChangeIsAllowed(t *testing.T) {
	ns := namespace(t)
	require.Equal(t, 0, kubectl(t, instanceYAML(ns, "db", "db", "small"), "apply", "-f", "-").ExitCode)

	r := kubectl(t, instanceYAML(ns, "db", "db", "large"), "apply", "--dry-run=server", "-f", "-")
	require.Equal(t, 0, r.ExitCode, r.Output())
	assert.Equal(t, "small", getInstance(t, ns, "db").Spec.PlanName, "a dry run writes nothing")

	r = kubectl(t, instanceYAML(ns, "db", "db", "large"), "apply", "-f", "-")
	require.Equal(t, 0, r.ExitCode, r.Output())
	assert.Equal(t, "large", getInstance(t, ns, "db").Spec.PlanName)
}

func TestLabelOnlyChangeIsAllowed(t *testing.T) {
	ns := namespace(t)
	require.Equal(t, 0, kubectl(t, instanceYAML(ns, "db", "db", "small"), "apply", "-f", "-").ExitCode)

	r := kubectl(t, "", "label", "serviceinstance", "db", "-n", ns, "team=payments")
	require.Equal(t, 0, r.ExitCode, r.Output())
	assert.Contains(t, r.Stdout, "serviceinstance.lockstep.dev/db labeled")
	assert.Equal(t, "payments", getInstance(t, ns, "db").Labels["team"])
}

func TestFinalizerRemovalOfDeletedObjectIsNotBlocked(t *testing.T) {
	ns := namespace(t)
	r := kubectl(t, instanceYAML(ns, "db", "db", "small"), "apply", "-f", "-")
	require.Equal(t, 0, r.ExitCode, r.Output())
	// A finalizer of someone else's keeps the object after lockstep let go.
	r = kubectl(t, "", "patch", "serviceinstance", "db", "-n", ns, "--type=json",
		"-p", `[{"op":"add","path":"/metadata/finalizers/-","value":"e2e.lockstep.dev/hold"}]`)
	require.Equal(t, 0, r.ExitCode, r.Output())

	r = kubectl(t, "", "delete", "serviceinstance", "db", "-n", ns, "--wait=false")
	require.Equal(t, 0, r.ExitCode, r.Output())
	require.NotNil(t, getInstance(t, ns, "db").DeletionTimestamp)

	// lockstep lets any update of an object being deleted through, but the
	// API server's own rules still refuse a create-only change, whose CEL
	// rules cannot see that the object is going away.
	r = kubectl(t, "", "patch", "serviceinstance", "db", "-n", ns, "--type=json",
		"-p", `[{"op":"replace","path":"/metadata/finalizers","value":[]},{"op":"replace","path":"/spec/serviceName","value":"queue"}]`)
	assert.NotEqual(t, 0, r.ExitCode)
	assert.Contains(t, r.Stderr, "spec.serviceName: Forbidden: create-only field")

	// Removing the finalizers is never blocked.
	r = kubectl(t, "", "patch", "serviceinstance", "db", "-n", ns, "--type=json",
		"-p", `[{"op":"replace","path":"/metadata/finalizers","value":[]}]`)
	require.Equal(t, 0, r.ExitCode, r.Output())

	require.Eventually(t, func() bool {
		err := cluster.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "db"}, &v1alpha1.ServiceInstance{})
		return apierrors.IsNotFound(err)
	}, 10*time.Second, 100*time.Millisecond, "the object is gone once its finalizers are removed")
}
