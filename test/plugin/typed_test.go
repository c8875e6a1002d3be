package plugin

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// activateQuick gives the sample service quick its typed kind, Quick
// (short name qck), as a cluster administrator does, until the test ends,
// and waits until the API server serves it. kubectl's discovery cache is
// the test's own.
func activateQuick(t *testing.T) {
	t.Helper()
	t.Setenv("KUBECACHEDIR", t.TempDir())
	ctx := context.Background()
	setKinds := func(kinds string) error {
		sb := &v1alpha1.ServiceBroker{ObjectMeta: metav1.ObjectMeta{Name: "embedded"}}
		return env.admin.Patch(ctx, sb, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"typedKinds":`+kinds+`}}`)))
	}
	require.NoError(t, setKinds(`[{"services":["quick"]}]`))
	t.Cleanup(func() {
		// Refused while objects of the kind remain: the namespaces of the
		// test go first.
		require.Eventually(t, func() bool { return setKinds("null") == nil }, 90*time.Second, 250*time.Millisecond, "kind Quick is deactivated")
	})
	require.Eventually(t, func() bool {
		var o v1alpha1.ServiceOffering
		if err := env.admin.Get(ctx, client.ObjectKey{Name: "embedded.quick"}, &o); err != nil {
			return false
		}
		return meta.IsStatusConditionTrue(o.Status.Conditions, v1alpha1.ConditionTypedKindReady)
	}, 60*time.Second, 200*time.Millisecond, "kind Quick is served")
}

// TestTypedKinds: the commands on an object of a typed kind, named
// KIND/NAME by its kind or its short name: provision --kind, bind to it,
// why, history, detach, and adopting it again under another name.
func TestTypedKinds(t *testing.T) {
	activateQuick(t)
	ctx := context.Background()
	ns := namespace(t, "plugin-typed")
	golden(t, "provision-typed", lockstep(t, ns, "provision", "orders", "--kind", "quick", "--plan", "small", "-p", "region=eu", "-p", "size=2"))
	golden(t, "provision-typed-invalid", lockstep(t, ns, "provision", "big", "--kind", "qck", "--plan", "small", "-p", "size=40", "-p", "region=mars"))
	golden(t, "provision-kind-and-service", lockstep(t, ns, "provision", "x", "--kind", "quick", "--service", "quick", "--plan", "small"))
	golden(t, "provision-kind-not-typed", lockstep(t, ns, "provision", "x", "--kind", "pods", "--plan", "small"))
	golden(t, "bind-typed", lockstep(t, ns, "bind", "orders-creds", "--instance", "quick/orders", "-p", "role=read"))
	golden(t, "why-typed", lockstep(t, ns, "why", "qck/orders"))
	golden(t, "why-typed-bare-name", lockstep(t, ns, "why", "orders"))
	golden(t, "why-not-lockstep", lockstep(t, ns, "why", "pods/orders"))
	golden(t, "history-typed", lockstep(t, ns, "history", "quick/orders"))
	golden(t, "complete-objects-typed", lockstep(t, ns, "__complete", "why", ""))

	// Let go of it, delete it, and adopt what the broker keeps under
	// another name: the history of each name is its own.
	require.NoError(t, env.admin.Delete(ctx, &v1alpha1.ServiceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "orders-creds"}}))
	gone(t, &v1alpha1.ServiceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "orders-creds"}})
	orders := &unstructured.Unstructured{}
	orders.SetAPIVersion("services.lockstep.dev/v1alpha1")
	orders.SetKind("Quick")
	require.NoError(t, env.admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "orders"}, orders))
	id, _, _ := unstructured.NestedString(orders.Object, "spec", "externalID")
	golden(t, "detach-typed", lockstep(t, ns, "detach", "quick/orders"))
	require.NoError(t, env.admin.Delete(ctx, orders))
	gone(t, orders)
	golden(t, "adopt-typed", lockstep(t, ns, "adopt", "instance", "qck/orders", "--external-id", id, "--plan", "small", "-p", "region=eu", "-p", "size=2"))
	golden(t, "history-typed-uids", lockstep(t, ns, "history", "quick/orders"))
	golden(t, "detach-all-typed", lockstep(t, ns, "detach", "--all"))
}

// TestProvisionProgress: while the broker works on an operation lockstep
// left in progress (the sample service slow sleeps longer than lockstep's
// admission budget), provision and bind wait, showing what the status
// reports of it, or until it does its BrokerOperation: each line the
// operation (its verb, where it stands and its BrokerOperation) and the
// conditions that say it is not done yet, each change once (TestProgress
// and TestFlightText in internal/plugin have their forms);
// then the instance is Ready, and the binding's credentials are in its
// Secret.
func TestProvisionProgress(t *testing.T) {
	ns := namespace(t, "plugin-progress")
	r := lockstep(t, ns, "provision", "slowdb", "--service", "slow", "--plan", "default", "-p", "seconds=8")
	waitedWithProgress(t, r, "serviceinstance/slowdb", "provision", "slowdb-provision", "serviceinstance/slowdb is Ready")
	assert.Contains(t, r.stderr, `broker "embedded" is still working to provision instance "slowdb"`, "the API server's warning")

	r = lockstep(t, ns, "bind", "slowdb-creds", "--instance", "slowdb", "-p", "seconds=8")
	waitedWithProgress(t, r, "servicebinding/slowdb-creds", "bind", "slowdb-creds-bind", "the credentials are in Secret slowdb-creds (keys: provider, type, username, waited)")
	assert.Contains(t, r.stderr, "still working to bind", "the API server's warning")
}

// waitedWithProgress checks what provision or bind printed of an object
// (resource, such as serviceinstance/slowdb) whose operation (verb, its
// BrokerOperation's name before its hash) the broker carried out after
// admission: created, waiting, at least one line of progress, each
// different from the one before, and last the line done.
func waitedWithProgress(t *testing.T, r result, resource, verb, operation, done string) {
	t.Helper()
	require.Equal(t, 0, r.code, r.text())
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	require.GreaterOrEqual(t, len(lines), 4, "created, waiting, progress and done: %s", r.text())
	assert.Equal(t, resource+" created", lines[0])
	assert.Equal(t, "waiting for "+resource+" to be Ready", lines[1])
	assert.Equal(t, done, lines[len(lines)-1])
	progress := regexp.MustCompile(`^  (` + verb + ` (in progress|pending|succeeded, to be committed) \(BrokerOperation ` + operation + `-[0-9a-f]{8}\)(: [^;]*)?)?(; )?([A-Za-z]+ (True|False|Unknown)( \([A-Za-z]+\))?(; )?)*$`)
	var shown int
	for i, l := range lines[2 : len(lines)-1] {
		if l == resource+" is Ready" {
			continue // bind: before where its credentials are
		}
		shown++
		assert.Regexp(t, progress, l, "progress line %d", i)
		if i > 0 {
			assert.NotEqual(t, lines[2+i-1], l, "each change once")
		}
	}
	assert.Positive(t, shown, "progress is shown while the broker works: %s", r.text())
}

// TestGlobalFlagsAfterThePluginName: kubectl runs the plugin with every
// argument after its name, kubectl's global flags among them, which the
// plugin takes as kubectl does (--as, --as-group, -n, --request-timeout);
// before the plugin's name kubectl itself refuses them, as the plugin
// guide says.
func TestGlobalFlagsAfterThePluginName(t *testing.T) {
	bin := buildPlugin(t)
	ns := namespace(t, "plugin-flags")
	run := func(args ...string) (string, error) {
		cmd := exec.Command(filepath.Join(bin, "kubectl"), args...)
		cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "KUBECONFIG="+env.kubeconfig)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	for _, tc := range []struct {
		name string
		args []string
		ok   bool
		want string
	}{
		{"impersonation", []string{"lockstep", "--as", "ben", "marketplace"}, false, `User "ben" cannot list resource "serviceplans"`},
		{"impersonation with a group", []string{"lockstep", "--as", "ben", "--as-group", "system:masters", "marketplace", "--service", "quick"}, true, "quick     small"},
		{"a namespace and a timeout", []string{"lockstep", "-n", ns, "--request-timeout", "30s", "history", "si/nothing"}, true, "No BrokerOperations of serviceinstance/nothing in namespace " + ns},
		{"the long namespace flag", []string{"lockstep", "--namespace=" + ns, "why", "namespace", ns}, true, "namespace " + ns + " is not being deleted"},
		{"before the plugin's name, kubectl refuses them", []string{"--as", "ben", "lockstep", "marketplace"}, false, "flags cannot be placed before plugin name: --as"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := run(tc.args...)
			if tc.ok {
				require.NoError(t, err, out)
			} else {
				require.Error(t, err, out)
			}
			assert.Contains(t, out, tc.want)
		})
	}
}
