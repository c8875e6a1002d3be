package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
)

// retried runs kubectl until it succeeds, as a person retries once the
// broker recovered (lockstep repeats a refusal for a moment without asking
// the broker again).
func retried(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var r result
	require.Eventually(t, func() bool {
		r = kubectl(t, stdin, args...)
		return r.ExitCode == 0
	}, 20*time.Second, 200*time.Millisecond, "kubectl %s never succeeded", strings.Join(args, " "))
	return r
}

// callsIn returns the broker calls about the instances of namespace ns
// (whose external ids start with it), and catalog fetches.
// callsIn returns the calls about objects of namespace ns, and those about
// no object; resync's reads (GET of an instance or binding), which run on
// their own schedule, are left out.
func callsIn(b *fakebroker.Broker, ns string) []fakebroker.Call {
	var out []fakebroker.Call
	for _, c := range b.Calls() {
		if c.Op == fakebroker.OpGetInstance || c.Op == fakebroker.OpGetBinding {
			continue
		}
		if c.InstanceID == "" || strings.HasPrefix(c.InstanceID, ns) {
			out = append(out, c)
		}
	}
	return out
}

// freshBroker clears the test broker's scripts and recorded calls.
func freshBroker(t *testing.T) *fakebroker.Broker {
	t.Helper()
	b := cluster.broker
	b.Reset()
	b.ResetCalls()
	t.Cleanup(b.Reset)
	return b
}

// instanceWith is an instance manifest with an explicit external id and
// parameters (JSON), so that tests can script the broker per instance.
func instanceWith(ns, name, plan, externalID, params string) string {
	y := fmt.Sprintf(`apiVersion: lockstep.dev/v1alpha1
kind: ServiceInstance
metadata:
  name: %s
  namespace: %s
spec:
  brokerName: acme
  serviceName: db
  planName: %s
  externalID: %s
`, name, ns, plan, externalID)
	if params != "" {
		y += "  parameters: " + params + "\n"
	}
	return y
}

func instanceExists(t *testing.T, ns, name string) bool {
	t.Helper()
	err := cluster.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &v1alpha1.ServiceInstance{})
	if apierrors.IsNotFound(err) {
		return false
	}
	require.NoError(t, err)
	return true
}

func TestProvisionReachesTheBrokerOnceWithTheUsersIdentity(t *testing.T) {
	b := freshBroker(t)
	ns := namespace(t)
	r := kubectl(t, instanceWith(ns, "db", "small", ns+"-db", `{"storageGB": 10, "region": "eu"}`), "apply", "-f", "-")
	require.Equal(t, 0, r.ExitCode, r.Output())

	calls := b.Calls(fakebroker.OpProvision)
	require.Len(t, calls, 1, "exactly one provision reaches the broker")
	c := calls[0]
	assert.Equal(t, "/v2/service_instances/"+ns+"-db", c.Path)
	assert.Equal(t, "true", c.Query.Get("accepts_incomplete"))
	assert.Equal(t, "2.17", c.Header.Get(osbapi.HeaderAPIVersion))
	assert.Equal(t, fakebroker.PlanSmallID, c.JSON["plan_id"])
	assert.Equal(t, map[string]any{"storageGB": float64(10), "region": "eu"}, c.JSON["parameters"])

	var who struct {
		Username string   `json:"username"`
		Groups   []string `json:"groups"`
	}
	origin := c.Header.Get(osbapi.HeaderOriginatingIdentity)
	require.Regexp(t, `^kubernetes `, origin)
	raw, err := base64.StdEncoding.DecodeString(origin[len("kubernetes "):])
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &who))
	assert.Equal(t, "alice", who.Username, "the broker learns who asked")
	assert.Contains(t, who.Groups, "system:masters")

	assert.Equal(t, c.JSON["context"].(map[string]any)["clusterid"], c.JSON["organization_guid"],
		"organization_guid, required by the specification, is the cluster's id")
	assert.Regexp(t, `^[0-9a-f-]{36}$`, c.JSON["space_guid"], "space_guid, required by the specification, is a GUID of the namespace")
	assert.NotEmpty(t, c.JSON["context"].(map[string]any)["clusterid"], "kube-system's UID when no cluster id is configured")

	assert.True(t, instanceExists(t, ns, "db"))
	_, held := b.Instance(ns + "-db")
	assert.True(t, held, "the broker holds the instance")
}

func TestUpdateRefusedByTheBrokerKeepsTheSpec(t *testing.T) {
	b := freshBroker(t)
	ns := namespace(t)
	require.Equal(t, 0, kubectl(t, instanceWith(ns, "db", "small", ns+"-db", ""), "apply", "-f", "-").ExitCode)

	b.ScriptInstance(fakebroker.OpUpdate, ns+"-db", fakebroker.Respond{Status: http.StatusUnprocessableEntity, Error: "PlanChangeNotSupported", Description: "no capacity for large instances in eu"})
	r := kubectl(t, instanceWith(ns, "db", "large", ns+"-db", ""), "apply", "-f", "-")
	assert.NotEqual(t, 0, r.ExitCode)
	assert.Contains(t, r.Stderr, `broker "acme" refused to change plan of instance "db" from "small" to "large"`)
	assert.Contains(t, r.Stderr, "no capacity for large instances in eu")
	assert.Contains(t, r.Stderr, `the instance keeps plan "small"`)

	r = kubectl(t, "", "get", "serviceinstance", "db", "-n", ns, "-o", "jsonpath={.spec.planName}")
	assert.Equal(t, "small", r.Stdout, "kubectl get shows the previous spec")
	assert.Equal(t, 1, b.Count(fakebroker.OpUpdate), "the broker saw one update")
	held, _ := b.Instance(ns + "-db")
	assert.Equal(t, fakebroker.PlanSmallID, held.PlanID)

	// The broker accepts the next try.
	retried(t, instanceWith(ns, "db", "large", ns+"-db", ""), "apply", "-f", "-")
	held, _ = b.Instance(ns + "-db")
	assert.Equal(t, fakebroker.PlanLargeID, held.PlanID)
	assert.Equal(t, "large", getInstance(t, ns, "db").Spec.PlanName)
}

func TestDeleteRefusedByTheBrokerIsRolledBack(t *testing.T) {
	b := freshBroker(t)
	ns := namespace(t)
	require.Equal(t, 0, kubectl(t, instanceWith(ns, "db", "small", ns+"-db", ""), "apply", "-f", "-").ExitCode)

	b.ScriptInstance(fakebroker.OpDeprovision, ns+"-db", fakebroker.Respond{Status: http.StatusUnprocessableEntity, Description: "backups exist: delete them first"})
	r := kubectl(t, "", "delete", "serviceinstance", "db", "-n", ns, "--wait=false")
	assert.NotEqual(t, 0, r.ExitCode)
	assert.Contains(t, r.Stderr, `broker "acme" refused to deprovision instance "db"`)
	assert.Contains(t, r.Stderr, "backups exist")
	assert.Contains(t, r.Stderr, "no deletion was started")
	assert.Nil(t, getInstance(t, ns, "db").DeletionTimestamp, "no deletionTimestamp is set")
	_, held := b.Instance(ns + "-db")
	assert.True(t, held)
	// kubectl get shows the refused deprovision as what it was, beside the
	// instance that is still there and ready.
	require.Eventually(t, func() bool {
		r = kubectl(t, "", "get", "serviceinstance", "db", "-n", ns)
		return regexp.MustCompile(`db\s+acme\s+db\s+small\s+True\s+True\s+deprovision\s+failed`).MatchString(r.Stdout)
	}, 20*time.Second, 200*time.Millisecond, "LAST OP and RESULT: %s", r.Stdout)

	b.Reset() // the broker recovers
	retried(t, "", "delete", "serviceinstance", "db", "-n", ns, "--timeout=20s")
	assert.False(t, instanceExists(t, ns, "db"), "the object is gone")
	_, held = b.Instance(ns + "-db")
	assert.False(t, held, "the broker no longer holds it")
}

func TestAsyncProvision(t *testing.T) {
	t.Run("completes within the budget", func(t *testing.T) {
		b := freshBroker(t)
		ns := namespace(t)
		b.ScriptInstance(fakebroker.OpProvision, ns+"-db", fakebroker.Respond{Async: &fakebroker.Async{InProgressPolls: 2}})
		r := kubectl(t, instanceWith(ns, "db", "small", ns+"-db", ""), "apply", "-f", "-")
		require.Equal(t, 0, r.ExitCode, r.Output())
		assert.GreaterOrEqual(t, b.Count(fakebroker.OpInstanceLastOperation), 3)
		assert.True(t, instanceExists(t, ns, "db"))
	})

	t.Run("fails", func(t *testing.T) {
		b := freshBroker(t)
		ns := namespace(t)
		b.ScriptInstance(fakebroker.OpProvision, ns+"-db", fakebroker.Respond{Async: &fakebroker.Async{InProgressPolls: 1, Fail: true, Description: "quota exceeded"}})
		r := kubectl(t, instanceWith(ns, "db", "small", ns+"-db", ""), "apply", "-f", "-")
		assert.NotEqual(t, 0, r.ExitCode)
		assert.Contains(t, r.Stderr, `broker "acme" failed to provision instance "db"`)
		assert.Contains(t, r.Stderr, "quota exceeded")
		assert.Contains(t, r.Stderr, "nothing was created")
		assert.False(t, instanceExists(t, ns, "db"))
	})

	t.Run("still running at the budget is allowed with a warning", func(t *testing.T) {
		b := freshBroker(t)
		ns := namespace(t)
		b.ScriptInstance(fakebroker.OpProvision, ns+"-db", fakebroker.Respond{Async: &fakebroker.Async{InProgressPolls: 1 << 20, ProgressDescription: "creating volumes"}})
		r := kubectl(t, instanceWith(ns, "db", "small", ns+"-db", ""), "apply", "-f", "-")
		require.Equal(t, 0, r.ExitCode, r.Output())
		assert.Contains(t, r.Stderr, "Warning:")
		assert.Contains(t, r.Stderr, `broker "acme" is still working to provision instance "db"`)
		assert.Contains(t, r.Stderr, "creating volumes")
		assert.True(t, instanceExists(t, ns, "db"))

		// The operation holds the instance's lock: a second change waits.
		r = kubectl(t, instanceWith(ns, "db", "large", ns+"-db", ""), "apply", "-f", "-")
		assert.NotEqual(t, 0, r.ExitCode)
		assert.Contains(t, r.Stderr, `another change of instance "db" is in flight at the broker: provision by "alice"`)
	})
}

func TestNoBrokerCallWithoutAChange(t *testing.T) {
	b := freshBroker(t)
	ns := namespace(t)
	require.Equal(t, 0, kubectl(t, instanceWith(ns, "db", "small", ns+"-db", ""), "apply", "-f", "-").ExitCode)
	b.ResetCalls()

	r := kubectl(t, instanceWith(ns, "db", "large", ns+"-db", ""), "apply", "--dry-run=server", "-f", "-")
	require.Equal(t, 0, r.ExitCode, r.Output())
	r = kubectl(t, "", "delete", "serviceinstance", "db", "-n", ns, "--dry-run=server")
	require.Equal(t, 0, r.ExitCode, r.Output())
	r = kubectl(t, "", "label", "serviceinstance", "db", "-n", ns, "team=payments")
	require.Equal(t, 0, r.ExitCode, r.Output())
	r = kubectl(t, "", "annotate", "serviceinstance", "db", "-n", ns, "note=hello")
	require.Equal(t, 0, r.ExitCode, r.Output())

	assert.Empty(t, callsIn(b, ns), "dry runs and metadata-only changes make no broker call")
	si := getInstance(t, ns, "db")
	assert.Equal(t, "small", si.Spec.PlanName)
	assert.Nil(t, si.DeletionTimestamp)
}

func TestStaticChecksReportEveryProblemWithoutCallingTheBroker(t *testing.T) {
	b := freshBroker(t)
	ns := namespace(t)
	require.Equal(t, 0, kubectl(t, instanceWith(ns, "db", "small", ns+"-db", `{"storageGB": 10, "region": "eu"}`), "apply", "-f", "-").ExitCode)
	require.Equal(t, 0, kubectl(t, instanceWith(ns, "fixed", "fixed", ns+"-fixed", ""), "apply", "-f", "-").ExitCode)
	b.ResetCalls()

	tests := []struct {
		name     string
		manifest string
		want     []string
	}{
		{"parameters violating the plan schema",
			instanceWith(ns, "new", "small", ns+"-new", `{"storageGB": 5000, "version": "9", "colour": "red"}`),
			[]string{`The ServiceInstance "new" is invalid`, "spec.parameters.storageGB", "spec.parameters.version", "colour"}},
		{"create-only parameter change",
			instanceWith(ns, "db", "small", ns+"-db", `{"storageGB": 10, "region": "us"}`),
			[]string{`spec.parameters.region: Invalid value: "us"`, "create-only parameter", `"eu"`}},
		{"plan change where the plan is not updateable",
			instanceWith(ns, "fixed", "small", ns+"-fixed", ""),
			[]string{`spec.planName: Invalid value: "small"`, "does not allow plan changes", `keeps plan "fixed"`}},
		{"unknown plan",
			instanceWith(ns, "new", "huge", ns+"-new", ""),
			[]string{`spec.planName: Invalid value: "huge"`, "small, large, fixed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := kubectl(t, tt.manifest, "apply", "-f", "-")
			assert.NotEqual(t, 0, r.ExitCode)
			assert.Contains(t, r.Stderr, "is invalid")
			for _, w := range tt.want {
				assert.Contains(t, r.Stderr, w)
			}
		})
	}
	for _, c := range callsIn(b, ns) {
		assert.Equal(t, fakebroker.OpCatalog, c.Op, "only catalog refreshes, no %s", c.Op)
	}
	assert.False(t, instanceExists(t, ns, "new"))
	assert.Equal(t, "fixed", getInstance(t, ns, "fixed").Spec.PlanName)
}

func TestRemovedPlanTakesNoNewInstancesButExistingOnesGoOn(t *testing.T) {
	b := freshBroker(t)
	ns := namespace(t)
	require.Equal(t, 0, kubectl(t, instanceWith(ns, "db", "large", ns+"-db", ""), "apply", "-f", "-").ExitCode)

	full := b.Catalog()
	t.Cleanup(func() { require.NoError(t, b.SetCatalog(full)); refreshCatalog(t) })
	reduced := fakebroker.DefaultCatalog()
	plans := reduced.Services[0].Plans
	reduced.Services[0].Plans = []osbapi.Plan{plans[0], plans[2]} // without "large"
	require.NoError(t, b.SetCatalog(reduced))
	refreshCatalog(t)

	r := kubectl(t, "", "get", "servicebroker", brokerName, "-o", `jsonpath={.status.services[0].plans[?(@.name=="large")].removedFromCatalog}`)
	assert.Equal(t, "true", r.Stdout, "the broker's status marks the plan removed")

	b.ResetCalls()
	r = kubectl(t, instanceWith(ns, "new", "large", ns+"-new", ""), "apply", "-f", "-")
	assert.NotEqual(t, 0, r.ExitCode)
	assert.Contains(t, r.Stderr, `spec.planName: Invalid value: "large"`)
	assert.Contains(t, r.Stderr, "takes no new instances")
	assert.Zero(t, b.Count(fakebroker.OpProvision))

	r = kubectl(t, instanceWith(ns, "db", "large", ns+"-db", `{"storageGB": 20}`), "apply", "-f", "-")
	require.Equal(t, 0, r.ExitCode, "an existing instance still updates: %s", r.Output())
	r = kubectl(t, "", "delete", "serviceinstance", "db", "-n", ns, "--timeout=20s")
	require.Equal(t, 0, r.ExitCode, "and deletes: %s", r.Output())
}

// refreshCatalog makes the catalog reconciler fetch the catalog of the
// test broker again and waits until it has.
func refreshCatalog(t *testing.T) {
	t.Helper()
	refreshBroker(t, brokerName)
}

func TestBrokerFailuresAreClearAndPersistNothing(t *testing.T) {
	tests := []struct {
		name    string
		respond fakebroker.Respond
		want    string
	}{
		{"broker slow past the budget", fakebroker.Respond{Hang: true}, `broker "acme" got the request to provision instance "db" (service "db", plan "small"), but no answer came back`},
		{"broker answering garbage", fakebroker.Respond{Status: http.StatusCreated, Malformed: true}, `but no answer came back: broker's answer was malformed`},
		{"broker closing the connection", fakebroker.Respond{CloseConnection: true}, `but no answer came back: broker's answer was cut off`},
		{"broker failing", fakebroker.Respond{Status: http.StatusServiceUnavailable, Description: "maintenance"}, `but no answer came back: broker answered 503: "maintenance"`},
		{"broker refusing in an errors array", fakebroker.Respond{Status: http.StatusBadRequest, Body: `{"errors":[{"msg":"Missing organization_guid"}]}`},
			`broker "acme" refused to provision instance "db" (service "db", plan "small"): "Missing organization_guid" (HTTP 400)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := freshBroker(t)
			ns := namespace(t)
			b.ScriptInstance(fakebroker.OpProvision, ns+"-db", tt.respond)
			r := kubectl(t, instanceWith(ns, "db", "small", ns+"-db", ""), "apply", "-f", "-")
			assert.NotEqual(t, 0, r.ExitCode)
			assert.Contains(t, r.Stderr, tt.want)
			assert.Regexp(t, `nothing was created|the outcome is unknown: the instance is not created`, r.Stderr)
			assert.False(t, instanceExists(t, ns, "db"), "nothing persisted")
		})
	}

	t.Run("broker down", func(t *testing.T) {
		down, err := fakebroker.Start()
		require.NoError(t, err)
		require.NoError(t, registerBroker("down", down.URL()))
		t.Cleanup(func() {
			_ = cluster.client.Delete(context.Background(), &v1alpha1.ServiceBroker{ObjectMeta: metav1.ObjectMeta{Name: "down"}})
		})
		down.Close() // connection refused from now on
		ns := namespace(t)
		r := kubectl(t, fmt.Sprintf(`apiVersion: lockstep.dev/v1alpha1
kind: ServiceInstance
metadata: {name: db, namespace: %s}
spec: {brokerName: down, serviceName: db, planName: small}
`, ns), "apply", "-f", "-")
		assert.NotEqual(t, 0, r.ExitCode)
		assert.Contains(t, r.Stderr, `could not provision instance "db" (service "db", plan "small") at broker "down"`)
		assert.Contains(t, r.Stderr, "connection refused")
		assert.Contains(t, r.Stderr, "nothing was created")
		assert.False(t, instanceExists(t, ns, "db"))
	})
}

func TestDeleteWithItsServiceBrokerGoneIsRefusedUntilItIsBack(t *testing.T) {
	moved, err := fakebroker.Start()
	require.NoError(t, err)
	t.Cleanup(moved.Close)
	require.NoError(t, registerBroker("moved", moved.URL()))
	t.Cleanup(func() {
		_ = cluster.client.Delete(context.Background(), &v1alpha1.ServiceBroker{ObjectMeta: metav1.ObjectMeta{Name: "moved"}})
	})
	ns := namespace(t)
	require.Equal(t, 0, kubectl(t, fmt.Sprintf(`apiVersion: lockstep.dev/v1alpha1
kind: ServiceInstance
metadata: {name: db, namespace: %s}
spec: {brokerName: moved, serviceName: db, planName: small, externalID: %s-db}
`, ns, ns), "apply", "-f", "-").ExitCode)
	// lockstep refuses to delete a ServiceBroker it manages instances at;
	// it can still be gone (deleted before lockstep was installed).
	r := kubectl(t, "", "delete", "servicebroker", "moved", "--timeout=20s")
	require.NotEqual(t, 0, r.ExitCode)
	assert.Contains(t, r.Stderr, `ServiceBroker "moved" cannot be deleted: lockstep manages 1 object(s) at it (serviceinstance `+ns+`/db)`)
	deleteServiceBrokerPastTheGuard(t, "moved")

	// Once lockstep has seen the ServiceBroker go, the instance cannot be
	// deprovisioned: the delete is refused and says what to do.
	want := `instance "db" cannot be deleted: no ServiceBroker named "moved" exists, so it cannot be deprovisioned at its broker; ` +
		`the instance stays as it was (no deletion was started); recreate ServiceBroker "moved" with the URL of the broker that holds the instance, then delete again; ` +
		`or to delete it without the broker (which then keeps what it holds): kubectl annotate serviceinstance db -n ` + ns + ` lockstep.dev/reconcile-policy=detach-on-delete, then delete again`
	require.Eventually(t, func() bool {
		r = kubectl(t, "", "delete", "serviceinstance", "db", "-n", ns, "--wait=false")
		return r.ExitCode != 0 && strings.Contains(r.Stderr, want)
	}, 20*time.Second, 200*time.Millisecond, "last answer: %s", r.Stderr)
	assert.Contains(t, r.Stderr, "no deletion was started")
	assert.Nil(t, getInstance(t, ns, "db").DeletionTimestamp, "no deletionTimestamp is set")
	_, held := moved.Instance(ns + "-db")
	assert.True(t, held, "the broker still holds the instance")

	require.NoError(t, registerBroker("moved", moved.URL()))
	retried(t, "", "delete", "serviceinstance", "db", "-n", ns, "--timeout=20s")
	assert.False(t, instanceExists(t, ns, "db"), "the object is gone")
	_, held = moved.Instance(ns + "-db")
	assert.False(t, held, "the broker no longer holds it")
}
