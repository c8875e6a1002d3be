package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
)

// marketBroker registers a test broker of its own as ServiceBroker name,
// so that its catalog can change without disturbing other tests; the
// ServiceBroker goes when the test ends (unless lockstep still manages
// objects at it).
func marketBroker(t *testing.T, name string) *fakebroker.Broker {
	t.Helper()
	b, err := fakebroker.Start()
	require.NoError(t, err)
	t.Cleanup(b.Close)
	require.NoError(t, registerBroker(name, b.URL()))
	t.Cleanup(func() {
		_ = cluster.client.Delete(context.Background(), &v1alpha1.ServiceBroker{ObjectMeta: metav1.ObjectMeta{Name: name}})
	})
	return b
}

// refreshBroker makes the catalog reconciler fetch the named broker's
// catalog again, as a person asks for it (the refresh annotation), and
// waits until it has. The sync time is stored to the second, so the
// broker is asked again (a new value each time) until its sync time moves
// past the one before.
func refreshBroker(t *testing.T, name string) {
	t.Helper()
	var sb v1alpha1.ServiceBroker
	require.NoError(t, cluster.client.Get(context.Background(), client.ObjectKey{Name: name}, &sb))
	before := sb.Status.LastCatalogSync
	require.Eventually(t, func() bool {
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"%d"}}}`, v1alpha1.AnnotationRefresh, time.Now().UnixNano())
		require.NoError(t, cluster.client.Patch(context.Background(), &sb, client.RawPatch(types.MergePatchType, []byte(patch))))
		return sb.Status.LastCatalogSync != nil && (before == nil || sb.Status.LastCatalogSync.After(before.Time))
	}, 10*time.Second, 200*time.Millisecond)
}

// plansOf lists, as kubectl shows them, the names of the ServicePlans
// selected by a field selector, one a line, sorted, with " removed" after
// those marked removedFromCatalog.
func plansOf(t *testing.T, selector string) string {
	t.Helper()
	r := kubectl(t, "", "get", "serviceplans", "--field-selector", selector,
		"-o", `jsonpath={range .items[*]}{.metadata.name}={.status.removedFromCatalog}{"\n"}{end}`)
	require.Equal(t, 0, r.ExitCode, r.Output())
	var lines []string
	for _, l := range strings.Fields(r.Stdout) {
		name, removed, _ := strings.Cut(l, "=")
		if removed == "true" {
			name += " removed"
		}
		lines = append(lines, name)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// eventuallyPlans waits until the plans selected are want.
func eventuallyPlans(t *testing.T, selector, want string) {
	t.Helper()
	var got string
	_ = wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		got = plansOf(t, selector)
		return got == want, nil
	})
	require.Equal(t, want, got, "kubectl get serviceplans --field-selector %s", selector)
}

func TestMarketplaceFollowsTheCatalog(t *testing.T) {
	const name = "market"
	b := marketBroker(t, name)
	sel := "spec.brokerName=" + name

	// The catalog appears: every plan, selectable by service.
	eventuallyPlans(t, sel, "market.db.fixed\nmarket.db.large\nmarket.db.small\nmarket.queue.shared\nmarket.queue.standard")
	eventuallyPlans(t, sel+",spec.serviceName=db", "market.db.fixed\nmarket.db.large\nmarket.db.small")

	r := kubectl(t, "", "get", "marketplace", "-l", v1alpha1.LabelBroker+"="+name)
	require.Equal(t, 0, r.ExitCode, r.Output())
	for _, want := range []string{"serviceoffering.lockstep.dev/market.db", "serviceoffering.lockstep.dev/market.queue",
		"serviceplan.lockstep.dev/market.db.small", "SERVICE", "PLAN", "FREE", "BINDABLE", "REMOVED"} {
		assert.Contains(t, r.Stdout, want, "kubectl get marketplace lists both kinds")
	}
	r = kubectl(t, "", "describe", "serviceplan", "market.db.small")
	require.Equal(t, 0, r.ExitCode, r.Output())
	for _, want := range []string{"Create Only Parameters:", "region", "Values:", `"17"`, "Create Only:", "true", "false", "Type:", "integer", "SchemasUsable"} {
		assert.Contains(t, r.Stdout, want, "kubectl describe shows the parameters")
	}

	// An instance uses "small"; then the catalog changes: a description,
	// "small" leaves (in use: marked), "queue" leaves (unused: gone).
	ns := namespace(t)
	manifest := strings.Replace(instanceWith(ns, "db", "small", ns+"-db", `{"region": "eu"}`), "brokerName: acme", "brokerName: "+name, 1)
	r = kubectl(t, manifest, "apply", "-f", "-")
	require.Equal(t, 0, r.ExitCode, r.Output())

	changed := fakebroker.DefaultCatalog()
	changed.Services[0].Plans[1].Description = "a larger database"
	changed.Services[0].Plans = changed.Services[0].Plans[1:] // without "small"
	changed.Services = changed.Services[:1]                   // without "queue"
	require.NoError(t, b.SetCatalog(changed))
	refreshBroker(t, name)
	eventuallyPlans(t, sel, "market.db.fixed\nmarket.db.large\nmarket.db.small removed")
	r = kubectl(t, "", "get", "serviceplan", "market.db.large", "-o", "wide")
	assert.Contains(t, r.Stdout, "a larger database", "updated, shown at -o wide")
	r = kubectl(t, "", "get", "serviceofferings", "--field-selector", sel, "-o", "name")
	assert.Equal(t, "serviceoffering.lockstep.dev/market.db\n", r.Stdout, "the unused service is gone")

	// The instance goes: so does its removed plan.
	r = kubectl(t, "", "delete", "serviceinstance", "db", "-n", ns, "--timeout=20s")
	require.Equal(t, 0, r.ExitCode, r.Output())
	eventuallyPlans(t, sel, "market.db.fixed\nmarket.db.large")

	// The ServiceBroker goes: so does its marketplace (garbage collector).
	require.NoError(t, cluster.client.Delete(context.Background(), &v1alpha1.ServiceBroker{ObjectMeta: metav1.ObjectMeta{Name: name}}))
	eventuallyPlans(t, sel, "")
	require.Eventually(t, func() bool {
		var offerings v1alpha1.ServiceOfferingList
		require.NoError(t, cluster.client.List(context.Background(), &offerings, client.MatchingFields{"spec.brokerName": name}))
		return len(offerings.Items) == 0
	}, 30*time.Second, 200*time.Millisecond, "the offerings go with their ServiceBroker")
}

func TestMarketplaceIsReadOnlyForEverybodyButLockstep(t *testing.T) {
	const plan = "acme.db.small"
	eventuallyPlans(t, "spec.brokerName=acme,spec.name=small", plan)
	refused := `ServicePlans are written by lockstep from broker "acme"'s catalog; user "alice" may not`
	for _, tt := range []struct {
		name  string
		stdin string
		args  []string
	}{
		{"delete", "", []string{"delete", "serviceplan", plan}},
		{"label", "", []string{"label", "serviceplan", plan, "mine=yes"}},
		{"patch the spec", "", []string{"patch", "serviceplan", plan, "--type=merge", "-p", `{"spec":{"free":false}}`}},
		{"patch the status", "", []string{"patch", "serviceplan", plan, "--subresource=status", "--type=merge", "-p", `{"status":{"removedFromCatalog":true}}`}},
		{"create", `apiVersion: lockstep.dev/v1alpha1
kind: ServicePlan
metadata:
  name: acme.db.forged
spec:
  brokerName: acme
  serviceName: db
  serviceID: db-service-id
  name: forged
  id: forged-id
  free: true
  bindable: true
  planUpdateable: true
`, []string{"create", "-f", "-"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := kubectl(t, tt.stdin, tt.args...)
			assert.NotEqual(t, 0, r.ExitCode, "alice is a cluster administrator, and still refused")
			assert.Contains(t, r.Stderr, refused)
			assert.Contains(t, r.Stderr, "Forbidden")
		})
	}
	r := kubectl(t, "", "delete", "serviceoffering", "acme.db")
	assert.NotEqual(t, 0, r.ExitCode)
	assert.Contains(t, r.Stderr, `ServiceOfferings are written by lockstep from broker "acme"'s catalog`)

	var p v1alpha1.ServicePlan
	require.NoError(t, cluster.client.Get(context.Background(), client.ObjectKey{Name: plan}, &p))
	assert.True(t, p.Spec.Free)
	assert.False(t, p.Status.RemovedFromCatalog)
	assert.Empty(t, p.Labels["mine"])
	err := cluster.client.Get(context.Background(), client.ObjectKey{Name: "acme.db.forged"}, &p)
	assert.True(t, apierrors.IsNotFound(err), "nothing forged: %v", err)
}

func TestUnusableSchemaIsReportedOnThePlanAndTheBroker(t *testing.T) {
	const name = "badschema"
	b := marketBroker(t, name)
	cat := fakebroker.DefaultCatalog()
	cat.Services[1].Plans[0].Schemas = &osbapi.Schemas{ServiceInstance: &osbapi.ServiceInstanceSchemas{
		Create: &osbapi.InputParameters{Parameters: []byte(`{"type": "object", "properties": {"a": {"$ref": "https://example.com/a.json"}}}`)}}}
	require.NoError(t, b.SetCatalog(cat))
	refreshBroker(t, name)

	require.Eventually(t, func() bool {
		var p v1alpha1.ServicePlan
		if cluster.client.Get(context.Background(), client.ObjectKey{Name: name + ".queue.standard"}, &p) != nil {
			return false
		}
		c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionSchemasUsable)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == "RemoteReference"
	}, 20*time.Second, 200*time.Millisecond, "the plan says why")
	r := kubectl(t, "", "get", "servicebroker", name, "-o", `jsonpath={.status.conditions[?(@.type=="SchemasUsable")].message}`)
	assert.Contains(t, r.Stdout, "1 plans have a parameter schema lockstep cannot use: queue/standard (RemoteReference)")
}

// TestGuideMarketplace runs the guide page docs/guide/marketplace.md as
// TestReadmeWalkthrough runs the walkthrough: against the
// embedded broker serving examples/bundles, as `make run` registers it.
func TestGuideMarketplace(t *testing.T) {
	steps := docSection(t, "docs/guide/marketplace.md", "")
	require.GreaterOrEqual(t, len(steps), 3)
	ns := namespace(t)
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	runSteps(t, steps, root, walkthroughKubeconfig(t, ns), ns, func(out string) string { return out })
}

// A ServiceBroker's spec.typedKinds activates typed kinds: the API server
// refuses a kind given for a pattern, and each activated service's
// offering shows its kind, served, until it is deactivated.
func TestMarketplaceShowsTypedKinds(t *testing.T) {
	const name = "typed"
	marketBroker(t, name)
	eventuallyPlans(t, "spec.brokerName="+name, "typed.db.fixed\ntyped.db.large\ntyped.db.small\ntyped.queue.shared\ntyped.queue.standard")
	patch := func(kinds string) result {
		return kubectl(t, "", "patch", "servicebroker", name, "--type=merge", "-p", `{"spec":{"typedKinds":`+kinds+`}}`)
	}
	shown := func(offering string) string {
		r := kubectl(t, "", "get", "serviceoffering", offering, "-o",
			`jsonpath={.status.typedKind.kind}/{.status.conditions[?(@.type=="TypedKindReady")].reason}`)
		require.Equal(t, 0, r.ExitCode, r.Output())
		return r.Stdout
	}
	eventuallyShown := func(offering, want string) {
		t.Helper()
		var got string
		_ = wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
			got = shown(offering)
			return got == want, nil
		})
		assert.Equal(t, want, got, "the typed kind of ServiceOffering %s", offering)
	}

	r := patch(`[{"services":["d*"],"kind":"Database"}]`)
	assert.NotEqual(t, 0, r.ExitCode)
	assert.Contains(t, r.Output(), "kind, plural and shortNames name the typed kind of one service: give them with exactly one service name, without *")

	// A name a served resource has is refused at once, with what has it.
	r = patch(`[{"services":["db"],"plural":"pods","shortNames":["po"]}]`)
	assert.NotEqual(t, 0, r.ExitCode)
	assert.Contains(t, r.Output(), `spec.typedKinds[0].plural: Invalid value: "pods": the name pods is resource pods (v1)'s: kubectl would find that first`)
	assert.Contains(t, r.Output(), `spec.typedKinds[0].shortNames[0]: Invalid value: "po": the name po is resource pods (v1)'s`)

	r = patch(`[{"services":["d*"]},{"services":["queue"],"kind":"TypedQueue"}]`)
	require.Equal(t, 0, r.ExitCode, r.Output())
	// Plan "fixed" of db and both plans of queue have no schemas.
	eventuallyShown("typed.db", "Db/FreeParameters")
	eventuallyShown("typed.queue", "TypedQueue/FreeParameters")
	r = kubectl(t, "", "get", "serviceoffering", "typed.queue", "-o", `jsonpath={.status.typedKind.crdName} {.status.typedKind.established} {.status.conditions[?(@.type=="TypedKindReady")].message}`)
	assert.Contains(t, r.Stdout, "typedqueues.services.lockstep.dev true ")
	assert.Contains(t, r.Stdout, "the API server serves kind TypedQueue")

	r = patch(`null`)
	require.Equal(t, 0, r.ExitCode, r.Output())
	eventuallyShown("typed.db", "/")
	eventuallyShown("typed.queue", "/")
}

// ledgerCatalog is a catalog of one service, ledger, whose create schema
// has version and size, and requires version where required is set; its
// update schema has size only, so version is create-only.
func ledgerCatalog(required bool) osbapi.Catalog {
	create := `{"type": "object", "properties": {"version": {"type": "string", "description": "Version."}, "size": {"type": "integer"}}}`
	if required {
		create = `{"type": "object", "required": ["version"], "properties": {"version": {"type": "string", "description": "Version."}, "size": {"type": "integer"}}}`
	}
	return osbapi.Catalog{Services: []osbapi.Service{{ID: "ledger-service-id", Name: "ledger", Description: "A ledger", PlanUpdateable: true,
		Plans: []osbapi.Plan{{ID: "ledger-standard-plan-id", Name: "standard", Description: "standard", Schemas: &osbapi.Schemas{
			ServiceInstance: &osbapi.ServiceInstanceSchemas{
				Create: &osbapi.InputParameters{Parameters: json.RawMessage(create)},
				Update: &osbapi.InputParameters{Parameters: json.RawMessage(`{"type": "object", "properties": {"size": {"type": "integer"}}}`)},
			}}}}}}}
}

// TestTypedKindRequiresOnceNoObjectLacks: when the catalog comes to
// require a parameter at creation that an object of the typed kind made
// before lacks, kubectl explain does not show it required while that
// object lacks it, the object's updates go on, the offering lists why in
// status.typedKind.dropped, and lockstep's webhook requires it of new
// objects; once no object lacks it, the next catalog sync makes the CRD
// require it and kubectl explain shows -required-.
func TestTypedKindRequiresOnceNoObjectLacks(t *testing.T) {
	const name = "ledgers"
	t.Setenv("KUBECACHEDIR", t.TempDir())
	b, err := fakebroker.Start()
	require.NoError(t, err)
	t.Cleanup(b.Close)
	require.NoError(t, b.SetCatalog(ledgerCatalog(false)))
	require.NoError(t, registerBroker(name, b.URL()))
	t.Cleanup(func() {
		_ = cluster.client.Delete(context.Background(), &v1alpha1.ServiceBroker{ObjectMeta: metav1.ObjectMeta{Name: name}})
	})
	ns := namespace(t)
	r := retried(t, "", "patch", "servicebroker", name, "--type=merge", "-p", `{"spec":{"typedKinds":[{"services":["ledger"]}]}}`)
	t.Cleanup(func() {
		kubectl(t, "", "delete", "ledgers.services.lockstep.dev", "--all", "-n", ns, "--timeout=30s")
		kubectl(t, "", "patch", "servicebroker", name, "--type=merge", "-p", `{"spec":{"typedKinds":null}}`)
	})
	field := func(jsonpath string) func() string {
		return func() string {
			return kubectl(t, "", "get", "serviceoffering", name+".ledger", "-o", "jsonpath="+jsonpath).Stdout
		}
	}
	eventually := func(read func() string, want, what string) {
		t.Helper()
		var got string
		_ = wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			got = read()
			return got == want, nil
		})
		require.Equal(t, want, got, what)
	}
	eventually(field(`{.status.typedKind.kind}/{.status.conditions[?(@.type=="TypedKindReady")].reason}`), "Ledger/Established", "kind Ledger is served")
	explained := func() string { return kubectl(t, "", "explain", "ledgers.spec.parameters").Stdout }

	retried(t, typedManifest("Ledger", ns, "old", "standard", `{"size": 1}`), "apply", "-f", "-")
	require.NoError(t, b.SetCatalog(ledgerCatalog(true)))
	refreshBroker(t, name)
	eventually(field(`{.status.typedKind.dropped[?(@.keyword=="required")].path}`), "spec.parameters.version", "the offering lists why the CRD does not require it")
	assert.NotContains(t, explained(), "-required-", "an object lacks it")

	r = kubectl(t, "", "patch", "ledgers.services.lockstep.dev", "old", "-n", ns, "--type=merge", "-p", `{"spec":{"parameters":{"size":2}}}`)
	assert.Equal(t, 0, r.ExitCode, "an object made before updates: %s", r.Output())
	r = kubectl(t, typedManifest("Ledger", ns, "new", "standard", `{"size": 1}`), "apply", "-f", "-")
	assert.NotEqual(t, 0, r.ExitCode, "lockstep requires it of a new object")
	assert.Contains(t, r.Output(), "spec.parameters.version")

	// The object that lacked it goes: at the next catalog sync the CRD
	// requires it.
	r = kubectl(t, "", "delete", "ledgers.services.lockstep.dev", "old", "-n", ns, "--timeout=30s")
	require.Equal(t, 0, r.ExitCode, r.Output())
	refreshBroker(t, name)
	eventually(field(`{.status.typedKind.dropped[?(@.keyword=="required")].path}`), "", "no longer listed")
	eventually(func() string {
		for _, l := range strings.Split(explained(), "\n") {
			if strings.Contains(l, "version") && strings.Contains(l, "<string>") {
				return strings.TrimSpace(l)
			}
		}
		return ""
	}, "version\t<string> -required-", "kubectl explain shows it required")
	r = kubectl(t, typedManifest("Ledger", ns, "new", "standard", `{"size": 1, "version": "16"}`), "apply", "-f", "-")
	assert.Equal(t, 0, r.ExitCode, r.Output())
	r = kubectl(t, "", "patch", "ledgers.services.lockstep.dev", "new", "-n", ns, "--type=merge", "-p", `{"spec":{"parameters":{"size":3}}}`)
	assert.Equal(t, 0, r.ExitCode, "an object that has it updates: %s", r.Output())
}
