package main

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/lockstep-dev/lockstep/internal/admission"
	// Everything lockstep's manager registers on controller-runtime's
	// registry (lockstep's metrics, controller-runtime's webhook, leader
	// election and client metrics) is registered by the packages it
	// imports.
	"github.com/lockstep-dev/lockstep/internal/app"
)

// root is the repository root, seen from this package.
const root = "../.."

// served is every metric lockstep's /metrics can serve, with its labels,
// from the descriptions of everything on controller-runtime's registry
// (a metric with no sample yet is described all the same).
func served(t *testing.T) map[string][]string {
	t.Helper()
	descs := make(chan *prometheus.Desc)
	go func() {
		ctrlmetrics.Registry.(prometheus.Collector).Describe(descs)
		close(descs)
	}()
	name := regexp.MustCompile(`fqName: "([^"]+)"`)
	variable := regexp.MustCompile(`variableLabels: \{([^}]*)\}\}$`)
	out := map[string][]string{}
	for d := range descs {
		s := d.String()
		m := name.FindStringSubmatch(s)
		require.NotNil(t, m, s)
		var labels []string
		if v := variable.FindStringSubmatch(s); v != nil && v[1] != "" {
			for _, l := range strings.Split(v[1], ",") {
				labels = append(labels, strings.TrimSuffix(strings.TrimPrefix(l, "c("), ")"))
			}
		}
		out[m[1]] = labels
	}
	// Prometheus adds up to every target it scrapes, labelled with the
	// target's job and instance.
	out["up"] = []string{"job", "instance"}
	require.Contains(t, out, "lockstep_admission_decisions_total", "lockstep's metrics are registered")
	require.Contains(t, out, "controller_runtime_webhook_latency_seconds", "controller-runtime's webhook metrics are registered")
	return out
}

// labelsOf returns the labels a metric name in a query may carry, and
// whether lockstep serves it: a described metric, or a histogram's
// _bucket (with le), _sum or _count.
func labelsOf(served map[string][]string, name string) ([]string, bool) {
	if l, ok := served[name]; ok {
		return l, true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			if l, ok := served[base]; ok {
				if suffix == "_bucket" {
					l = append(append([]string{}, l...), "le")
				}
				return l, true
			}
		}
	}
	return nil, false
}

// grafanaVariables are replaced before a dashboard query is parsed: a
// range by a duration, any other variable (in a label matcher) by a
// regular expression.
var (
	grafanaRange    = regexp.MustCompile(`\$__(rate_interval|interval|range)`)
	grafanaVariable = regexp.MustCompile(`\$\{?[a-z_]+\}?`)
)

// checkQuery parses a PromQL expression with Prometheus's own parser and
// checks that every metric it selects is served, with the labels it
// matches on.
func checkQuery(t *testing.T, served map[string][]string, expr string) {
	t.Helper()
	expr = grafanaVariable.ReplaceAllString(grafanaRange.ReplaceAllString(expr, "5m"), ".*")
	node, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	require.NoError(t, err, expr)
	selectors := 0
	parser.Inspect(node, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		selectors++
		known, ok := labelsOf(served, vs.Name)
		if !assert.True(t, ok, "%s names %q, which lockstep does not serve", expr, vs.Name) {
			return nil
		}
		for _, m := range vs.LabelMatchers {
			if m.Name != labels.MetricName {
				assert.Contains(t, known, m.Name, "%s matches label %q, which %s does not have", expr, m.Name, vs.Name)
			}
		}
		return nil
	})
	assert.Positive(t, selectors, "%s selects no metric", expr)
}

// parseRules loads a rules file with Prometheus's own rule parser.
func parseRules(t *testing.T, content []byte) *rulefmt.RuleGroups {
	t.Helper()
	groups, errs := rulefmt.Parse(content, false, model.UTF8Validation, parser.NewParser(parser.Options{}), slog.New(slog.DiscardHandler))
	require.Empty(t, errs)
	require.NotNil(t, groups)
	return groups
}

func read(t *testing.T, path string) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, path))
	require.NoError(t, err)
	return raw
}

// TestAlertsParseAndNameOnlyServedMetrics loads the rules file and the
// PrometheusRule with Prometheus's rule parser (which parses every
// expression and annotation template) and checks every metric the
// expressions name against what lockstep serves.
func TestAlertsParseAndNameOnlyServedMetrics(t *testing.T) {
	metrics := served(t)
	plain := parseRules(t, read(t, rulesFile))

	var pr struct {
		Kind string         `yaml:"kind"`
		Spec map[string]any `yaml:"spec"`
	}
	require.NoError(t, yaml.Unmarshal(read(t, prometheusRuleFile), &pr))
	assert.Equal(t, "PrometheusRule", pr.Kind)
	spec, err := yaml.Marshal(pr.Spec)
	require.NoError(t, err)
	assert.Equal(t, plain, parseRules(t, spec), "the PrometheusRule holds the rules file's groups")

	var names []string
	for _, g := range plain.Groups {
		for _, r := range g.Rules {
			t.Run(r.Alert, func(t *testing.T) {
				checkQuery(t, metrics, r.Expr)
				assert.Contains(t, []string{"warning", "critical"}, r.Labels["severity"])
				assert.NotEmpty(t, r.Annotations["summary"])
				assert.NotEmpty(t, r.Annotations["description"])
			})
			names = append(names, r.Alert)
		}
	}
	// What the operators of a webhook on the write path want to be woken for.
	for _, want := range []string{
		"LockstepBrokerUnreachable",          // a broker unreachable
		"LockstepOperationOutcomeUnknown",    // operations in OutcomeUnknown past a bound
		"LockstepOperationInProgressTooLong", // operations InProgress past a bound
		"LockstepDriftNotCorrected",          // drift not corrected
		"LockstepWebhookNearTimeout",         // webhook latency near the API server's timeout
		"LockstepCatalogSyncFailing",         // catalog sync failing
		"LockstepCertificateExpiresSoon",     // certificate near expiry
	} {
		assert.Contains(t, names, want)
	}
}

// TestDashboardQueriesParseAndNameOnlyServedMetrics checks every query of
// the Grafana dashboard (panels and variables) the same way, and that the
// dashboard shows what an operator looks for.
func TestDashboardQueriesParseAndNameOnlyServedMetrics(t *testing.T) {
	metrics := served(t)
	var d struct {
		UID    string `json:"uid"`
		Panels []struct {
			ID      int    `json:"id"`
			Type    string `json:"type"`
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	raw := read(t, dashboardFile)
	require.NoError(t, json.Unmarshal(raw, &d))
	assert.Equal(t, "lockstep", d.UID)

	ids := map[int]bool{}
	var all []string
	for _, p := range d.Panels {
		assert.False(t, ids[p.ID], "panel id %d is used twice", p.ID)
		ids[p.ID] = true
		if p.Type == "row" {
			continue
		}
		require.NotEmpty(t, p.Targets, "panel %q has no query", p.Title)
		for _, target := range p.Targets {
			t.Run(p.Title, func(t *testing.T) { checkQuery(t, metrics, target.Expr) })
			all = append(all, target.Expr)
		}
	}
	for _, v := range d.Templating.List {
		if q, ok := v.Query.(string); ok && v.Type == "query" {
			m := regexp.MustCompile(`^label_values\(([a-z_:]+), ([a-z_]+)\)$`).FindStringSubmatch(q)
			require.NotNil(t, m, "variable %s: %s", v.Name, q)
			known, ok := labelsOf(metrics, m[1])
			assert.True(t, ok, "variable %s names %q, which lockstep does not serve", v.Name, m[1])
			assert.Contains(t, known, m[2])
		}
	}
	joined := strings.Join(all, "\n")
	for _, want := range []string{
		`lockstep_broker_request_duration_seconds_count{broker`,        // broker call rates, per broker
		`lockstep_broker_request_duration_seconds_bucket{broker`,       // broker latencies, per broker
		`status=~"4..|5..|none"`,                                       // refusals per broker
		`controller_runtime_webhook_latency_seconds_bucket`,            // admission latency
		`lockstep_operation_records{phase=~"Pending|InProgress`,        // operations in progress
		`reason="OutcomeUnknown"`,                                      // outcome unknown
		`lockstep_object_conditions{condition="InSync",status!="True"`, // drift
		`lockstep_resync_results_total`,                                // resync rate
		`max by (phase) (lockstep_operation_records)`,                  // journal size
	} {
		assert.Contains(t, joined, want)
	}
}

// TestTheJobIsTheScrapedService: the absent-target alert and the
// dashboard select lockstep's targets by job, which the Prometheus
// Operator names after the Service its ServiceMonitor selects: the
// Service of deploy/ with the metrics port.
func TestTheJobIsTheScrapedService(t *testing.T) {
	var svc struct {
		Metadata struct {
			Name   string            `yaml:"name"`
			Labels map[string]string `yaml:"labels"`
		} `yaml:"metadata"`
		Spec struct {
			Ports []struct {
				Name string `yaml:"name"`
			} `yaml:"ports"`
		} `yaml:"spec"`
	}
	require.NoError(t, yaml.Unmarshal(read(t, "deploy/manager/service.yaml"), &svc))
	assert.Equal(t, job, svc.Metadata.Name)
	var ports []string
	for _, p := range svc.Spec.Ports {
		ports = append(ports, p.Name)
	}
	assert.Contains(t, ports, "metrics")
	var sm struct {
		Spec struct {
			Selector struct {
				MatchLabels map[string]string `yaml:"matchLabels"`
			} `yaml:"selector"`
		} `yaml:"spec"`
	}
	require.NoError(t, yaml.Unmarshal(read(t, "deploy/monitoring/servicemonitor.yaml"), &sm))
	require.NotEmpty(t, sm.Spec.Selector.MatchLabels)
	for k, v := range sm.Spec.Selector.MatchLabels {
		assert.Equal(t, v, svc.Metadata.Labels[k], "the ServiceMonitor selects the Service %s", svc.Metadata.Name)
	}
}

// TestWebhookSelectorsMatchEveryWebhook: the dashboard's latency panel
// selects every path lockstep registers its webhooks on, the typed
// kinds' included, and the timeout alert every validating one.
func TestWebhookSelectorsMatchEveryWebhook(t *testing.T) {
	srv := &registered{}
	admission.Register(srv, app.Scheme(), admission.Handlers{
		InstanceDefaulter: &admission.Defaulter[admission.Instance]{}, InstanceValidator: &admission.Validator[admission.Instance]{},
		BindingDefaulter: &admission.Defaulter[admission.Binding]{}, BindingValidator: &admission.Validator[admission.Binding]{},
		StatusGuard: &admission.StatusGuard{}, BrokerGuard: &admission.BrokerGuard{}, MarketplaceGuard: &admission.MarketplaceGuard{},
		TypedKinds: &admission.TypedKinds{},
	})
	require.Contains(t, srv.paths, admission.ValidateTypedPath)
	all, err := parser.NewParser(parser.Options{}).ParseMetricSelector("{" + allWebhooks + "}")
	require.NoError(t, err)
	validating, err := parser.NewParser(parser.Options{}).ParseMetricSelector("{" + validatingWebhooks + "}")
	require.NoError(t, err)
	for _, p := range srv.paths {
		assert.True(t, all[0].Matches(p), "the dashboard's webhook selector matches %s", p)
		assert.Equal(t, strings.HasPrefix(p, "/validate-"), validating[0].Matches(p), "the timeout alert's webhook selector and %s", p)
	}
	assert.False(t, all[0].Matches("/validate-example-com-v1-widget"), "another program's webhook")
}

// registered records the paths webhooks are registered on.
type registered struct {
	webhook.Server
	paths []string
}

func (r *registered) Register(path string, _ http.Handler) { r.paths = append(r.paths, path) }

// TestTheChartCarriesTheSameFiles: the Helm chart serves the dashboard
// and rules that deploy/monitoring holds.
func TestTheChartCarriesTheSameFiles(t *testing.T) {
	for _, f := range []string{dashboardFile, rulesFile} {
		assert.Equal(t, string(read(t, f)), string(read(t, filepath.Join(chartFiles, filepath.Base(f)))), f)
	}
}
