package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/promslog"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/promql/promqltest"
	"github.com/prometheus/prometheus/rules"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/internal/admission"
)

// ruleCase is one alert evaluated against series by Prometheus's own rule
// engine, as `promtool test rules` does: the series (promqltest's load
// notation, one sample a minute from time 0), the time the rules are
// evaluated until (every 30s, the group's interval, from 0), and the
// alerts that fire then (each alert's labels but alertname); none: the
// alert stays quiet.
type ruleCase struct {
	name   string
	alert  string
	series string
	at     time.Duration
	fires  []map[string]string
}

func firing(l ...string) []map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(l); i += 2 {
		m[l[i]] = l[i+1]
	}
	return []map[string]string{m}
}

// ruleCases are, for every alert, series that make it fire and series
// that keep it quiet.
var ruleCases = []ruleCase{
	{name: "every replica down", alert: "LockstepDown", at: 10 * time.Minute,
		series: `up{job="lockstep-webhook", instance="10.0.0.1:8080"} 0x20
up{job="lockstep-webhook", instance="10.0.0.2:8080"} 0x20`,
		fires: firing("severity", "critical")},
	{name: "no replica scraped at all", alert: "LockstepDown", at: 10 * time.Minute,
		series: `up{job="kube-state-metrics", instance="10.0.0.9:8080"} 1x20`,
		fires:  firing("severity", "critical")},
	{name: "one replica of two up", alert: "LockstepDown", at: 10 * time.Minute,
		series: `up{job="lockstep-webhook", instance="10.0.0.1:8080"} 1x20
up{job="lockstep-webhook", instance="10.0.0.2:8080"} 0x20`},
	{name: "down for less than 5 minutes", alert: "LockstepDown", at: 13 * time.Minute,
		series: `up{job="lockstep-webhook", instance="10.0.0.1:8080"} 1x10 0x3`},

	{name: "most requests unanswered", alert: "LockstepBrokerUnreachable", at: 15 * time.Minute,
		series: `lockstep_broker_request_duration_seconds_count{broker="acme", verb="provision", status="none", instance="a"} 0+10x20
lockstep_broker_request_duration_seconds_count{broker="acme", verb="provision", status="201", instance="a"} 0+1x20
lockstep_broker_request_duration_seconds_count{broker="other", verb="provision", status="201", instance="a"} 0+10x20`,
		fires: firing("broker", "acme", "severity", "critical")},
	{name: "a few requests unanswered", alert: "LockstepBrokerUnreachable", at: 15 * time.Minute,
		series: `lockstep_broker_request_duration_seconds_count{broker="acme", verb="provision", status="none", instance="a"} 0+1x20
lockstep_broker_request_duration_seconds_count{broker="acme", verb="provision", status="201", instance="a"} 0+10x20`},

	{name: "not ready on every replica", alert: "LockstepCatalogSyncFailing", at: 20 * time.Minute,
		series: `lockstep_servicebroker_ready{broker="acme", instance="a"} 0x30
lockstep_servicebroker_ready{broker="acme", instance="b"} 0x30`,
		fires: firing("broker", "acme", "severity", "warning")},
	{name: "not ready for 10 minutes only", alert: "LockstepCatalogSyncFailing", at: 20 * time.Minute,
		series: `lockstep_servicebroker_ready{broker="acme", instance="a"} 1x10 0x20`},

	{name: "objects of a typed kind wait for an outcome", alert: "LockstepOperationOutcomeUnknown", at: 35 * time.Minute,
		series: `lockstep_object_conditions{kind="PostgresqlDb", condition="InSync", status="Unknown", reason="OutcomeUnknown", instance="a"} 2x40`,
		fires:  firing("kind", "PostgresqlDb", "severity", "warning")},
	{name: "outcome unknown for 20 minutes", alert: "LockstepOperationOutcomeUnknown", at: 20 * time.Minute,
		series: `lockstep_object_conditions{kind="ServiceInstance", condition="InSync", status="Unknown", reason="OutcomeUnknown", instance="a"} 2x40`},
	{name: "in sync", alert: "LockstepOperationOutcomeUnknown", at: 35 * time.Minute,
		series: `lockstep_object_conditions{kind="ServiceInstance", condition="InSync", status="True", reason="InSync", instance="a"} 5x40`},

	{name: "in progress since time 0", alert: "LockstepOperationInProgressTooLong", at: 70 * time.Minute,
		series: `lockstep_operation_oldest_start_timestamp_seconds{phase="InProgress", instance="a"} 0x80`,
		fires:  firing("phase", "InProgress", "severity", "warning")},
	{name: "in progress for 40 minutes", alert: "LockstepOperationInProgressTooLong", at: 70 * time.Minute,
		series: `lockstep_operation_oldest_start_timestamp_seconds{phase="InProgress", instance="a"} 1800x80`},

	{name: "an orphan not compensated", alert: "LockstepOperationNotSettled", at: 25 * time.Minute,
		series: `lockstep_operation_oldest_start_timestamp_seconds{phase="Orphaned", instance="a"} 0x30`,
		fires:  firing("phase", "Orphaned", "severity", "warning")},
	{name: "only an operation in progress", alert: "LockstepOperationNotSettled", at: 25 * time.Minute,
		series: `lockstep_operation_oldest_start_timestamp_seconds{phase="InProgress", instance="a"} 0x30`},

	{name: "plan drift", alert: "LockstepDriftNotCorrected", at: 35 * time.Minute,
		series: `lockstep_object_conditions{kind="ServiceInstance", condition="InSync", status="False", reason="PlanDrift", instance="a"} 1x40
lockstep_object_conditions{kind="ServiceInstance", condition="InSync", status="False", reason="PlanDrift", instance="b"} 1x40`,
		fires: firing("kind", "ServiceInstance", "reason", "PlanDrift", "severity", "warning")},
	{name: "gone at the broker is not drift", alert: "LockstepDriftNotCorrected", at: 35 * time.Minute,
		series: `lockstep_object_conditions{kind="ServiceInstance", condition="InSync", status="False", reason="GoneAtBroker", instance="a"} 1x40`},

	{name: "a typed kind's webhook slow", alert: "LockstepWebhookNearTimeout", at: 20 * time.Minute,
		series: `controller_runtime_webhook_latency_seconds_bucket{webhook="` + admission.ValidateTypedPath + `", le="10", instance="a"} 0+5x30
controller_runtime_webhook_latency_seconds_bucket{webhook="` + admission.ValidateTypedPath + `", le="+Inf", instance="a"} 0+10x30
controller_runtime_webhook_latency_seconds_count{webhook="` + admission.ValidateTypedPath + `", instance="a"} 0+10x30`,
		fires: firing("webhook", admission.ValidateTypedPath, "severity", "warning")},
	{name: "the instances' webhook slow", alert: "LockstepWebhookNearTimeout", at: 20 * time.Minute,
		series: `controller_runtime_webhook_latency_seconds_bucket{webhook="` + admission.ValidateInstancePath + `", le="10", instance="a"} 0+5x30
controller_runtime_webhook_latency_seconds_count{webhook="` + admission.ValidateInstancePath + `", instance="a"} 0+10x30`,
		fires: firing("webhook", admission.ValidateInstancePath, "severity", "warning")},
	{name: "webhooks fast", alert: "LockstepWebhookNearTimeout", at: 20 * time.Minute,
		series: `controller_runtime_webhook_latency_seconds_bucket{webhook="` + admission.ValidateTypedPath + `", le="10", instance="a"} 0+10x30
controller_runtime_webhook_latency_seconds_count{webhook="` + admission.ValidateTypedPath + `", instance="a"} 0+10x30`},
	{name: "another program's webhook slow", alert: "LockstepWebhookNearTimeout", at: 20 * time.Minute,
		series: `controller_runtime_webhook_latency_seconds_bucket{webhook="/validate-example-com-v1-widget", le="10", instance="a"} 0+5x30
controller_runtime_webhook_latency_seconds_count{webhook="/validate-example-com-v1-widget", instance="a"} 0+10x30`},

	{name: "5 days left", alert: "LockstepCertificateExpiresSoon", at: 70 * time.Minute,
		series: `lockstep_webhook_certificate_expiry_timestamp_seconds{instance="a"} 432000x80`,
		fires:  firing("severity", "warning")},
	{name: "20 hours left", alert: "LockstepCertificateExpiresSoon", at: 70 * time.Minute,
		series: `lockstep_webhook_certificate_expiry_timestamp_seconds{instance="a"} 72000x80`,
		fires:  []map[string]string{{"severity": "warning"}, {"severity": "critical"}}},
	{name: "30 days left", alert: "LockstepCertificateExpiresSoon", at: 70 * time.Minute,
		series: `lockstep_webhook_certificate_expiry_timestamp_seconds{instance="a"} 2592000x80`},

	{name: "no replica leads", alert: "LockstepNoLeader", at: 10 * time.Minute,
		series: `leader_election_master_status{name="lockstep-reconcilers", instance="a"} 0x20
leader_election_master_status{name="lockstep-reconcilers", instance="b"} 0x20`,
		fires: firing("severity", "warning")},
	{name: "one replica leads", alert: "LockstepNoLeader", at: 10 * time.Minute,
		series: `leader_election_master_status{name="lockstep-reconcilers", instance="a"} 1x20
leader_election_master_status{name="lockstep-reconcilers", instance="b"} 0x20`},
	{name: "another program's election", alert: "LockstepNoLeader", at: 10 * time.Minute,
		series: `leader_election_master_status{name="lockstep-reconcilers", instance="a"} 1x20
leader_election_master_status{name="other-controller", instance="c"} 0x20`},
}

// evaluate loads series, evaluates the rules file's groups every group
// interval from time 0 until at with Prometheus's rule manager and PromQL
// engine (promqltest's lazy loader, the engine under `promtool test
// rules`), and returns the alerts of the named rule that fire then.
func evaluate(t *testing.T, rulesPath string, c ruleCase) []*rules.Alert {
	t.Helper()
	p := parser.NewParser(parser.Options{})
	suite, err := promqltest.NewLazyLoader("load 1m\n"+indent(c.series), promqltest.LazyLoaderOpts{
		EnableAtModifier: true, EnableNegativeOffset: true, Parser: p,
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = suite.Close() })
	m := rules.NewManager(&rules.ManagerOptions{
		QueryFunc:    rules.EngineQueryFunc(suite.QueryEngine(), suite.Storage()),
		AppendableV2: suite.Storage(),
		Context:      context.Background(),
		NotifyFunc:   func(context.Context, string, ...*rules.Alert) {},
		Logger:       promslog.NewNopLogger(),
		Parser:       p,
	})
	groups, errs := m.LoadGroups(time.Minute, labels.EmptyLabels(), "", nil, false, rulesPath)
	require.Empty(t, errs)
	require.NotEmpty(t, groups)
	var interval time.Duration
	for _, g := range groups {
		interval = g.Interval()
		for _, r := range g.Rules() {
			if ar, ok := r.(*rules.AlertingRule); ok {
				ar.SetRestored(true) // as promtool does: alerts fire from the first evaluation on
			}
		}
	}
	start := time.Unix(0, 0).UTC()
	for ts := start; !ts.After(start.Add(c.at)); ts = ts.Add(interval) {
		suite.WithSamplesTill(ts, func(err error) {
			require.NoError(t, err)
			for _, g := range groups {
				g.Eval(suite.Context(), ts)
				for _, r := range g.Rules() {
					require.NoError(t, r.LastError(), "%s at %s", r.Name(), ts.Sub(start))
				}
			}
		})
	}
	var out []*rules.Alert
	for _, g := range groups {
		for _, r := range g.Rules() {
			if ar, ok := r.(*rules.AlertingRule); ok && ar.Name() == c.alert {
				for _, a := range ar.ActiveAlerts() {
					if a.State == rules.StateFiring {
						out = append(out, a)
					}
				}
			}
		}
	}
	return out
}

func indent(series string) string {
	lines := strings.Split(strings.TrimSpace(series), "\n")
	for i, l := range lines {
		lines[i] = "  " + strings.TrimSpace(l)
	}
	return strings.Join(lines, "\n")
}

// TestAlertsFireWhenTheyShould evaluates every alert of the generated
// rules file against series that make it fire, and series that must keep
// it quiet, with Prometheus's own rule engine; the annotations of an alert
// that fires are rendered (templates and all) and its runbook exists.
func TestAlertsFireWhenTheyShould(t *testing.T) {
	path := filepath.Join(root, rulesFile)
	quiet, fires := map[string]bool{}, map[string]bool{}
	for _, c := range ruleCases {
		t.Run(c.alert+": "+c.name, func(t *testing.T) {
			got := evaluate(t, path, c)
			var gotLabels []map[string]string
			for _, a := range got {
				l := a.Labels.Map()
				assert.Equal(t, c.alert, l[labels.AlertName])
				delete(l, labels.AlertName)
				gotLabels = append(gotLabels, l)

				ann := a.Annotations.Map()
				for _, k := range []string{"summary", "description", "runbook_url"} {
					assert.NotEmpty(t, ann[k], k)
					assert.NotContains(t, ann[k], "<no value>", "%s renders: %s", k, ann[k])
					assert.NotContains(t, ann[k], "{{", "%s renders: %s", k, ann[k])
				}
				assert.Equal(t, runbookURL+c.alert+".md", ann["runbook_url"])
			}
			sortLabels := func(ls []map[string]string) {
				slices.SortFunc(ls, func(a, b map[string]string) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
			}
			sortLabels(gotLabels)
			want := slices.Clone(c.fires)
			sortLabels(want)
			assert.Equal(t, want, gotLabels, "the alerts that fire at %s", c.at)
		})
		if c.fires == nil {
			quiet[c.alert] = true
		} else {
			fires[c.alert] = true
		}
	}
	for _, a := range alerts {
		assert.True(t, fires[a.name], "%s has no case where it fires", a.name)
		assert.True(t, quiet[a.name], "%s has no case where it stays quiet", a.name)
	}
}

// TestEveryAlertHasARunbook: every alert's runbook_url names a page of
// docs/runbooks that says what the alert means, how to confirm it and what
// to do, and every page there is an alert's.
func TestEveryAlertHasARunbook(t *testing.T) {
	pages := map[string]bool{}
	entries, err := os.ReadDir(filepath.Join(root, runbooks))
	require.NoError(t, err)
	for _, e := range entries {
		if e.Name() != "README.md" {
			pages[e.Name()] = true
		}
	}
	heading := regexp.MustCompile(`(?m)^## (.+)$`)
	for _, g := range parseRules(t, read(t, rulesFile)).Groups {
		for _, r := range g.Rules {
			url := r.Annotations["runbook_url"]
			page, ok := strings.CutPrefix(url, runbookURL)
			require.True(t, ok, "%s: runbook_url %s is under %s", r.Alert, url, runbookURL)
			assert.Equal(t, r.Alert+".md", page)
			raw := read(t, filepath.Join(runbooks, page))
			var sections []string
			for _, m := range heading.FindAllStringSubmatch(string(raw), -1) {
				sections = append(sections, m[1])
			}
			assert.Equal(t, []string{"Meaning", "Confirm", "Act"}, sections, "%s: the runbook's sections", page)
			assert.Contains(t, string(raw), "# "+r.Alert+"\n", "%s: the runbook is titled with its alert", page)
			delete(pages, page)
		}
	}
	assert.Empty(t, slices.Sorted(maps.Keys(pages)), "runbooks of no alert")
	index := string(read(t, filepath.Join(runbooks, "README.md")))
	for _, a := range alerts {
		assert.Contains(t, index, "("+a.name+".md)", "docs/runbooks/README.md lists %s", a.name)
	}
}
