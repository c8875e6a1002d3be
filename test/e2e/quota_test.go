package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
)

// createQuota creates the ResourceQuota name in namespace ns with kubectl, as
// an administrator does, limiting the object count resource
// (count/<resource>.<group>) to n, and waits until the resource quota
// controller has counted what the namespace holds (status.used has the
// resource): until then kube-apiserver, and lockstep, refuse every create
// it limits with "status unknown". The controller finds a kind made a
// moment ago (a typed kind's) at its next discovery, within half a
// minute, and counts a quota again only when its limits change: the
// quota is made again until it is counted.
func createQuota(t *testing.T, ns, name, resource string, n int) {
	t.Helper()
	create := func() {
		r := kubectl(t, "", "create", "quota", name, "-n", ns, fmt.Sprintf("--hard=%s=%d", resource, n))
		require.Equal(t, 0, r.ExitCode, r.Output())
	}
	create()
	counted := func() bool {
		var q corev1.ResourceQuota
		require.NoError(t, cluster.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &q))
		_, ok := q.Status.Used[corev1.ResourceName(resource)]
		return ok
	}
	deadline := time.Now().Add(90 * time.Second)
	for !counted() {
		require.True(t, time.Now().Before(deadline), "the resource quota controller never counted %s in quota %s of %s", resource, name, ns)
		waited := time.Now()
		for !counted() && time.Since(waited) < 3*time.Second {
			time.Sleep(100 * time.Millisecond)
		}
		if !counted() {
			r := kubectl(t, "", "delete", "quota", name, "-n", ns)
			require.Equal(t, 0, r.ExitCode, r.Output())
			create()
		}
	}
}

// overQuota is the refusal of a create over quota name of namespace ns,
// which limits resource (of kind) to one and counts one in use: the API
// server's status and words, then what they mean.
func overQuota(ns, name, resource, kind string) []string {
	count := "count/" + resource
	return []string{
		"Error from server (Forbidden)",
		fmt.Sprintf(`denied the request: exceeded quota: %s, requested: %s=1, used: %s=1, limited: %s=1: `, name, count, count, count),
		fmt.Sprintf(`ResourceQuota "%s" of namespace "%s" limits %s to 1 and counts 1 in use, so the API server would refuse this create after lockstep; `+
			`nothing was created and the broker was not called; delete a %s of this namespace first, or ask a cluster administrator to raise the quota (kubectl describe quota %s -n %s)`,
			name, ns, resource, kind, name, ns),
	}
}

// TestQuotaRefusesCreatesOverItBeforeTheBroker: with a quota of one
// instance, one binding and one object of a typed kind in a namespace,
// the first create of each reaches the broker; the next, through the real
// kubectl (and its server-side dry run), is refused with the quota's
// status and message, nothing is persisted or journaled, and the broker
// records no request for it.
func TestQuotaRefusesCreatesOverItBeforeTheBroker(t *testing.T) {
	b := freshBroker(t)
	ns := namespace(t)
	nothingFor := func(t *testing.T, id string) {
		t.Helper()
		for _, c := range b.Calls() {
			assert.NotEqual(t, id, c.InstanceID, "the broker got %s %s", c.Op, c.Path)
			assert.NotEqual(t, id, c.BindingID, "the broker got %s %s", c.Op, c.Path)
		}
		var ops v1alpha1.BrokerOperationList
		require.NoError(t, cluster.client.List(context.Background(), &ops, client.InNamespace(ns)))
		for _, op := range ops.Items {
			assert.NotEqual(t, id, op.Spec.Target.ExternalID, "journaled: %s", op.Name)
		}
	}
	refused := func(t *testing.T, r result, want []string) {
		t.Helper()
		assert.NotEqual(t, 0, r.ExitCode)
		for _, w := range want {
			assert.Contains(t, strings.Join(strings.Fields(r.Stderr), " "), w)
		}
	}

	t.Run("instances", func(t *testing.T) {
		createQuota(t, ns, "instances", "count/serviceinstances.lockstep.dev", 1)
		r := kubectl(t, instanceWith(ns, "db", "small", ns+"-db", ""), "apply", "-f", "-")
		require.Equal(t, 0, r.ExitCode, r.Output())
		require.Len(t, b.Calls(fakebroker.OpProvision), 1)

		second := instanceWith(ns, "db2", "small", ns+"-db2", "")
		refused(t, kubectl(t, second, "apply", "-f", "-"), overQuota(ns, "instances", "serviceinstances.lockstep.dev", "ServiceInstance"))
		refused(t, kubectl(t, second, "create", "--dry-run=server", "-f", "-"), overQuota(ns, "instances", "serviceinstances.lockstep.dev", "ServiceInstance"))
		assert.False(t, instanceExists(t, ns, "db2"))
		nothingFor(t, ns+"-db2")
		assert.Len(t, b.Calls(fakebroker.OpProvision), 1, "one provision: the first instance's")
	})

	t.Run("bindings", func(t *testing.T) {
		createQuota(t, ns, "bindings", "count/servicebindings.lockstep.dev", 1)
		r := kubectl(t, bindingYAML(ns, "creds", "db", ns+"-creds", ""), "apply", "-f", "-")
		require.Equal(t, 0, r.ExitCode, r.Output())

		refused(t, kubectl(t, bindingYAML(ns, "creds2", "db", ns+"-creds2", ""), "apply", "-f", "-"),
			overQuota(ns, "bindings", "servicebindings.lockstep.dev", "ServiceBinding"))
		assert.False(t, bindingExists(t, ns, "creds2"))
		_, found := getSecret(t, ns, "creds2")
		assert.False(t, found, "no credentials")
		nothingFor(t, ns+"-creds2")
		assert.Len(t, b.Calls(fakebroker.OpBind), 1, "one bind: the first binding's")
	})

	t.Run("a typed kind", func(t *testing.T) {
		kind := installTypedKind(t, fakebroker.ServiceDB)
		resource := kind.Plural + "." + kind.GVK.Group
		createQuota(t, ns, "typed", "count/"+resource, 1)
		db := func(name string) string {
			return fmt.Sprintf("apiVersion: %s\nkind: %s\nmetadata: {name: %s, namespace: %s}\nspec: {plan: small, externalID: %s-%s}\n",
				kind.GVK.GroupVersion(), kind.GVK.Kind, name, ns, ns, name)
		}
		r := kubectl(t, db("typed"), "apply", "-f", "-")
		require.Equal(t, 0, r.ExitCode, r.Output())
		provisions := len(b.Calls(fakebroker.OpProvision))

		refused(t, kubectl(t, db("typed2"), "apply", "-f", "-"), overQuota(ns, "typed", resource, kind.GVK.Kind))
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(kind.GVK)
		err := cluster.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "typed2"}, u)
		assert.True(t, apierrors.IsNotFound(err), "typed2 is not persisted: %v", err)
		nothingFor(t, ns+"-typed2")
		assert.Len(t, b.Calls(fakebroker.OpProvision), provisions)
		kubectl(t, "", "delete", strings.ToLower(kind.GVK.Kind)+"."+kind.GVK.Group, "typed", "-n", ns, "--timeout=30s")
	})
}
