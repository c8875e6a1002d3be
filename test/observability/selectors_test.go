package observability

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/admission"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
)

// selector is one vector selector of a rule or a dashboard query.
type selector struct {
	// where names the alert or panel, and expr is its whole expression.
	where, expr string
	matchers    []*labels.Matcher
}

func (s selector) String() string {
	var ms []string
	for _, m := range s.matchers {
		ms = append(ms, m.String())
	}
	return s.where + ": {" + strings.Join(ms, ", ") + "}"
}

// matches reports whether the selector selects the series.
func (s selector) matches(series labels.Labels) bool {
	for _, m := range s.matchers {
		if !m.Matches(series.Get(m.Name)) {
			return false
		}
	}
	return true
}

// grafana's variables are replaced before a query is parsed: a range by
// a duration, any other variable (in a label matcher) by ".*", as the
// dashboard's "All".
var (
	grafanaRange    = regexp.MustCompile(`\$__(rate_interval|interval|range)`)
	grafanaVariable = regexp.MustCompile(`\$\{?[a-z_]+\}?`)
)

// monitoringSelectors are every vector selector of deploy/monitoring's
// alerting rules and dashboard (its panels' queries and its variables'),
// parsed with Prometheus's PromQL parser.
func monitoringSelectors(t *testing.T) []selector {
	t.Helper()
	p := parser.NewParser(parser.Options{})
	var out []selector
	add := func(where, expr string) {
		expr = grafanaVariable.ReplaceAllString(grafanaRange.ReplaceAllString(expr, "5m"), ".*")
		node, err := p.ParseExpr(expr)
		require.NoError(t, err, "%s: %s", where, expr)
		parser.Inspect(node, func(n parser.Node, _ []parser.Node) error {
			if vs, ok := n.(*parser.VectorSelector); ok {
				out = append(out, selector{where: where, expr: expr, matchers: vs.LabelMatchers})
			}
			return nil
		})
	}
	dir := filepath.Join(env.cp.Root, "deploy", "monitoring")
	raw, err := os.ReadFile(filepath.Join(dir, "lockstep-rules.yaml"))
	require.NoError(t, err)
	var rules struct {
		Groups []struct {
			Rules []struct{ Alert, Expr string }
		}
	}
	require.NoError(t, yaml.Unmarshal(raw, &rules))
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			add("alert "+r.Alert, r.Expr)
		}
	}
	raw, err = os.ReadFile(filepath.Join(dir, "grafana-dashboard.json"))
	require.NoError(t, err)
	var dashboard struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
		Templating struct {
			List []struct {
				Name, Type string
				Query      any
			}
		}
	}
	require.NoError(t, json.Unmarshal(raw, &dashboard))
	for _, panel := range dashboard.Panels {
		for _, target := range panel.Targets {
			add("panel "+panel.Title, target.Expr)
		}
	}
	labelValues := regexp.MustCompile(`^label_values\(([a-z_:]+), ([a-z_]+)\)$`)
	for _, v := range dashboard.Templating.List {
		if q, ok := v.Query.(string); ok && v.Type == "query" {
			m := labelValues.FindStringSubmatch(q)
			require.NotNil(t, m, "variable %s: %s", v.Name, q)
			add("variable "+v.Name, m[1]+`{`+m[2]+`=~".+"}`)
		}
	}
	require.Greater(t, len(out), 20)
	return out
}

// scrape reads lockstep's /metrics into series, as Prometheus stores
// them: a histogram is its _bucket (with le), _sum and _count series.
// Prometheus's own up{job, instance} is added as it would be for the
// target: job is the Service the ServiceMonitor selects, deploy/'s
// lockstep-webhook.
func scrape(t *testing.T) []labels.Labels {
	t.Helper()
	resp, err := http.Get(env.metrics) //nolint:noctx // loopback, bounded by the client's default transport
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	instance := strings.TrimPrefix(strings.TrimSuffix(env.metrics, "/metrics"), "http://")
	out := []labels.Labels{labels.FromStrings(labels.MetricName, "up", "job", scrapeJob(t), "instance", instance)}
	for name, f := range families {
		for _, m := range f.GetMetric() {
			base := map[string]string{}
			for _, l := range m.GetLabel() {
				base[l.GetName()] = l.GetValue()
			}
			series := func(name string, extra ...string) {
				l := map[string]string{labels.MetricName: name}
				for k, v := range base {
					l[k] = v
				}
				for i := 0; i+1 < len(extra); i += 2 {
					l[extra[i]] = extra[i+1]
				}
				out = append(out, labels.FromMap(l))
			}
			switch f.GetType() {
			case dto.MetricType_HISTOGRAM:
				for _, b := range m.GetHistogram().GetBucket() {
					series(name+"_bucket", "le", strconv.FormatFloat(b.GetUpperBound(), 'g', -1, 64))
				}
				series(name+"_bucket", "le", "+Inf")
				series(name + "_sum")
				series(name + "_count")
			case dto.MetricType_SUMMARY:
				for _, q := range m.GetSummary().GetQuantile() {
					series(name, "quantile", strconv.FormatFloat(q.GetQuantile(), 'g', -1, 64))
				}
				series(name + "_sum")
				series(name + "_count")
			default:
				series(name)
			}
		}
	}
	return out
}

// scrapeJob is the job Prometheus gives lockstep's targets: the name of
// the Service of deploy/ with the metrics port, which the ServiceMonitor
// selects.
func scrapeJob(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(env.cp.Root, "deploy", "manager", "service.yaml"))
	require.NoError(t, err)
	var svc struct {
		Metadata struct{ Name string }
	}
	require.NoError(t, yaml.Unmarshal(raw, &svc))
	return svc.Metadata.Name
}

// unmatched are the selectors that select none of the series.
func unmatched(selectors []selector, series []labels.Labels) []selector {
	var out []selector
	for _, s := range selectors {
		if !slices.ContainsFunc(series, s.matches) {
			out = append(out, s)
		}
	}
	return out
}

// TestSelectorsMatchWhatLockstepServes runs lockstep with a typed kind
// active and brokers that answer, refuse, hang, vanish and drift, scrapes
// its /metrics, and evaluates every selector of the alerting rules and
// the dashboard against the series it serves: each one matches some, by
// label values (a webhook path, a phase, a reason), as Prometheus would
// select them; and a selector on the webhook path that takes the
// validating (or mutating) webhooks takes all of them, the typed kinds'
// included.
func TestSelectorsMatchWhatLockstepServes(t *testing.T) {
	selectors := monitoringSelectors(t)
	ctx := context.Background()
	ns := namespace(t)

	// A typed kind: service db of broker "typed" as kind Db. Its object
	// is provisioned and updated through the typed webhooks; then an
	// update the broker never answers leaves its outcome unknown (the
	// broker answers no last_operation either), holding the object's
	// lock, and the next update is refused as busy.
	typed := broker(t, "typed", nil)
	r := kubectl(t, "", "patch", "servicebroker", "typed", "--type=merge", "-p", `{"spec":{"typedKinds":[{"services":["db"]}]}}`)
	require.Equal(t, 0, r.ExitCode, r.Output())
	eventually(t, 60*time.Second, "the typed kind's CRD established", func() bool {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := env.client.Get(ctx, client.ObjectKey{Name: "dbs.services.lockstep.dev"}, &crd); err != nil {
			return false
		}
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true
			}
		}
		return false
	})
	db := func(storage int) string {
		return fmt.Sprintf(`apiVersion: services.lockstep.dev/v1alpha1
kind: Db
metadata: {name: tdb, namespace: %s}
spec: {plan: small, externalID: %s-tdb, parameters: {storageGB: %d}}
`, ns, ns, storage)
	}
	r = kubectl(t, db(10), "create", "-f", "-")
	require.Equal(t, 0, r.ExitCode, r.Output())
	typedReady := func() bool {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("services.lockstep.dev/v1alpha1")
		u.SetKind("Db")
		if err := env.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "tdb"}, u); err != nil {
			return false
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == v1alpha1.ConditionReady && m["status"] == string(metav1.ConditionTrue) {
				g, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
				return g == u.GetGeneration()
			}
		}
		return false
	}
	eventually(t, 60*time.Second, "Db tdb Ready", typedReady)
	r = kubectl(t, db(20), "apply", "--server-side", "--force-conflicts", "-f", "-")
	require.Equal(t, 0, r.ExitCode, r.Output())
	eventually(t, 60*time.Second, "Db tdb updated and Ready", typedReady)
	typed.Script(fakebroker.OpUpdate, fakebroker.Respond{Hang: true})
	typed.Always(fakebroker.OpInstanceLastOperation, fakebroker.Respond{Status: http.StatusInternalServerError, Description: "down"})
	r = kubectl(t, db(30), "apply", "--server-side", "--force-conflicts", "-f", "-")
	require.NotEqual(t, 0, r.ExitCode)
	require.Contains(t, r.Output(), "the outcome is unknown")
	r = kubectl(t, db(40), "apply", "--server-side", "--force-conflicts", "-f", "-")
	require.NotEqual(t, 0, r.ExitCode)
	require.Contains(t, r.Output(), "in flight at the broker")

	// A ServiceBroker nobody answers for.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	gone := "http://" + ln.Addr().String()
	require.NoError(t, ln.Close())
	register(t, &v1alpha1.ServiceBroker{ObjectMeta: metav1.ObjectMeta{Name: "gone"}, Spec: v1alpha1.ServiceBrokerSpec{URL: gone}}, false)

	// A provision whose answer never comes (the broker drops the
	// connection) is an orphan, and the broker refuses to remove it.
	orphans := broker(t, "orphans", nil)
	orphans.Script(fakebroker.OpProvision, fakebroker.Respond{CloseConnection: true, Apply: true})
	orphans.Always(fakebroker.OpDeprovision, fakebroker.Respond{Status: http.StatusInternalServerError, Description: "busy"})
	r = kubectl(t, instanceYAML(ns, "orphan", "orphans", "small"), "create", "-f", "-")
	require.NotEqual(t, 0, r.ExitCode)

	// An instance whose plan changes at its broker behind lockstep's back;
	// the broker refuses the correction.
	drifting := broker(t, "drifting", nil)
	r = kubectl(t, instanceYAML(ns, "drift", "drifting", "small"), "create", "-f", "-")
	require.Equal(t, 0, r.ExitCode, r.Output())
	ready(t, ns, "drift")
	drifting.Always(fakebroker.OpUpdate, fakebroker.Respond{Status: http.StatusUnprocessableEntity, Description: "no"})
	held, ok := drifting.Instance(ns + "-drift")
	require.True(t, ok)
	held.PlanID = fakebroker.PlanLargeID
	drifting.PutInstance(held)

	var series []labels.Labels
	var missing []selector
	eventually(t, 90*time.Second, "every selector to match lockstep's series", func() bool {
		series = scrape(t)
		missing = unmatched(selectors, series)
		return len(missing) == 0
	})
	if !assert.Empty(t, missing) {
		for _, s := range missing {
			t.Logf("matches nothing: %s", s)
		}
	}

	t.Run("a webhook selector takes every webhook of the kind it selects", func(t *testing.T) {
		served := map[string]bool{}
		for _, s := range series {
			if s.Get(labels.MetricName) == "controller_runtime_webhook_latency_seconds_count" {
				served[s.Get("webhook")] = true
			}
		}
		require.True(t, served[admission.ValidateTypedPath], "the typed kinds' validating webhook is served: %v", served)
		require.True(t, served[admission.MutateTypedPath], "the typed kinds' mutating webhook is served: %v", served)
		checked := 0
		for _, s := range selectors {
			for _, m := range s.matchers {
				if m.Name != "webhook" {
					continue
				}
				checked++
				for _, prefix := range []string{"/validate-", "/mutate-"} {
					takes := false
					for w := range served {
						takes = takes || (strings.HasPrefix(w, prefix) && m.Matches(w))
					}
					if !takes {
						continue
					}
					for w := range served {
						if strings.HasPrefix(w, prefix) {
							assert.True(t, m.Matches(w), "%s takes %s webhooks, but not %s", s, prefix, w)
						}
					}
				}
			}
		}
		assert.Positive(t, checked, "the rules and the dashboard select webhooks by path")
	})

	t.Run("the objects behind the series", func(t *testing.T) {
		var sb v1alpha1.ServiceBroker
		require.NoError(t, env.client.Get(ctx, client.ObjectKey{Name: "gone"}, &sb))
		assert.False(t, meta.IsStatusConditionTrue(sb.Status.Conditions, v1alpha1.ConditionReady), "the broker nobody answers for is not Ready")
		var ops v1alpha1.BrokerOperationList
		require.NoError(t, env.client.List(ctx, &ops, client.InNamespace(ns)))
		phases := map[v1alpha1.OperationPhase]bool{}
		for _, op := range ops.Items {
			phases[op.Status.Phase] = true
		}
		assert.True(t, phases[v1alpha1.PhaseOrphaned], "an orphan the broker does not let go: %v", phases)
		assert.True(t, phases[v1alpha1.PhaseInProgress], "an update whose outcome is unknown: %v", phases)
	})
}
