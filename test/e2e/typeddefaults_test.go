package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
)

// TestTypedKindDefaultsComeBack: an object of a typed kind is labelled as
// defaulted when it is created. A replace that leaves out what was
// defaulted, the label included, gets it all back, as a ServiceInstance
// does. A finalizer taken off an object that keeps the label is put back
// by the reconciler. A replace that keeps the label but leaves out
// spec.externalID is refused, the field being create-only (by lockstep's
// precheck, ahead of the CRD's rule that says the same), and nothing
// changes.
func TestTypedKindDefaultsComeBack(t *testing.T) {
	kind := installTypedKind(t, fakebroker.ServiceDB)
	freshBroker(t)
	ns := namespace(t)
	manifest := func(labels string) string {
		return fmt.Sprintf("apiVersion: services.lockstep.dev/v1alpha1\nkind: Db\nmetadata:\n  name: db\n  namespace: %s\n%sspec:\n  plan: small\n", ns, labels)
	}
	read := func() *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(kind.GVK)
		require.NoError(t, cluster.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "db"}, u))
		return u
	}
	externalID := func(u *unstructured.Unstructured) string {
		id, _, _ := unstructured.NestedString(u.Object, "spec", "externalID")
		return id
	}
	retried(t, manifest(""), "create", "-f", "-")
	created := read()
	id := externalID(created)
	require.NotEmpty(t, id, "spec.externalID is defaulted")
	assert.Equal(t, "true", created.GetLabels()[v1alpha1.DefaultedLabel], "the object is labelled as defaulted")
	assert.Equal(t, []string{v1alpha1.Finalizer}, created.GetFinalizers())

	r := kubectl(t, manifest(""), "replace", "-f", "-")
	require.Equal(t, 0, r.ExitCode, r.Output())
	replaced := read()
	assert.Equal(t, id, externalID(replaced), "a replace without spec.externalID keeps it")
	broker, _, _ := unstructured.NestedString(replaced.Object, "spec", "brokerName")
	assert.Equal(t, brokerName, broker, "and spec.brokerName")
	assert.Equal(t, "true", replaced.GetLabels()[v1alpha1.DefaultedLabel], "and the label")
	assert.Equal(t, []string{v1alpha1.Finalizer}, replaced.GetFinalizers(), "and the finalizer")

	r = kubectl(t, "", "patch", "dbs.services.lockstep.dev", "db", "-n", ns, "--type=json", "-p", `[{"op":"remove","path":"/metadata/finalizers"}]`)
	require.Equal(t, 0, r.ExitCode, r.Output())
	assert.Eventually(t, func() bool {
		return strings.Join(read().GetFinalizers(), ",") == v1alpha1.Finalizer
	}, 20*time.Second, 100*time.Millisecond, "the reconciler puts the finalizer back on a labelled object")

	r = kubectl(t, manifest("  labels:\n    "+v1alpha1.DefaultedLabel+": \"true\"\n"), "replace", "-f", "-")
	require.NotEqual(t, 0, r.ExitCode, r.Output())
	assert.Contains(t, r.Output(), `The Db "db" is invalid`)
	assert.Contains(t, r.Output(), `spec.externalID: Forbidden: create-only field: it cannot be removed after creation (was "`+id+`"); put the old value back, or delete and recreate the object`)
	assert.NotContains(t, r.Output(), "status.", "the status the API server keeps is not the request's")
	assert.Equal(t, id, externalID(read()), "nothing changed")
}

// matchConditionEvaluations is how many times kube-apiserver evaluated the
// match conditions of the named webhooks, from its own metrics.
func matchConditionEvaluations(t *testing.T, names ...string) int {
	t.Helper()
	r := kubectl(t, "", "get", "--raw", "/metrics")
	require.Equal(t, 0, r.ExitCode, r.Output())
	n := 0
	for line := range strings.SplitSeq(r.Stdout, "\n") {
		if !strings.HasPrefix(line, "apiserver_admission_match_condition_evaluation_seconds_count{") {
			continue
		}
		for _, name := range names {
			if strings.Contains(line, `name="`+name+`"`) {
				v, err := strconv.Atoi(line[strings.LastIndexByte(line, ' ')+1:])
				require.NoError(t, err, line)
				n += v
			}
		}
	}
	return n
}
