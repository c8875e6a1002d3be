package main

import (
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/variants"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// query is one PromQL query of a panel and its legend.
type query struct {
	expr, legend string
}

// panel is one time series panel: a title, a unit, a description and its
// queries. Rows of panels make the dashboard.
type panel struct {
	title, unit, description string
	queries                  []query
	// stat shows the last value instead of a graph.
	stat bool
}

type row struct {
	title  string
	panels []panel
}

// The broker variable narrows the broker panels to some ServiceBrokers.
const brokers = `broker=~"$broker"`

// rows are the dashboard's rows, top to bottom.
var rows = []row{
	{"Admission", []panel{
		{title: "Admission decisions", unit: "reqps", description: "Decisions of lockstep's validating webhooks per second, by kind, result and reason: a rise in denied Invalid is users' input, in BrokerRefused a broker saying no, in BrokerUnavailable or BrokerOutcomeUnknown a broker that does not answer.",
			queries: []query{{`sum by (kind, result, reason) (rate(lockstep_admission_decisions_total[$__rate_interval]))`, "{{kind}} {{result}} {{reason}}"}}},
		{title: "Webhook latency", unit: "s", description: "How long each of lockstep's webhooks takes, the typed kinds' included (the API server gives up after 30s; lockstep's budget is 25s).",
			queries: []query{
				{`histogram_quantile(0.99, sum by (le, webhook) (rate(controller_runtime_webhook_latency_seconds_bucket{` + allWebhooks + `}[$__rate_interval])))`, "p99 {{webhook}}"},
				{`histogram_quantile(0.5, sum by (le, webhook) (rate(controller_runtime_webhook_latency_seconds_bucket{` + allWebhooks + `}[$__rate_interval])))`, "p50 {{webhook}}"},
			}},
		{title: "Replicas up", description: "lockstep replicas Prometheus scrapes that answer (up{job=\"" + job + "\"}): with none, the API server refuses every change of lockstep's kinds (LockstepDown).", stat: true,
			queries: []query{{`sum(up{job="` + job + `"})`, "replicas up"}}},
		{title: "Changes refused: object busy", unit: "reqps", description: "Changes refused with 409 because another operation held the object's lock.",
			queries: []query{{`sum by (kind) (rate(lockstep_lock_contention_total[$__rate_interval]))`, "{{kind}}"}}},
	}},
	{"Brokers", []panel{
		{title: "Broker requests", unit: "reqps", description: "Requests to each broker per second, by verb.",
			queries: []query{{`sum by (broker, verb) (rate(lockstep_broker_request_duration_seconds_count{` + brokers + `}[$__rate_interval]))`, "{{broker}} {{verb}}"}}},
		{title: "Broker latency (p99)", unit: "s", description: "99th percentile of each broker's answers, by verb; the admission budget is 25s.",
			queries: []query{{`histogram_quantile(0.99, sum by (le, broker, verb) (rate(lockstep_broker_request_duration_seconds_bucket{` + brokers + `}[$__rate_interval])))`, "{{broker}} {{verb}}"}}},
		{title: "Broker refusals and no answers", unit: "reqps", description: "Answers with a 4xx or 5xx status, and requests that got no answer (status none), per broker.",
			queries: []query{{`sum by (broker, status) (rate(lockstep_broker_request_duration_seconds_count{` + brokers + `,status=~"4..|5..|none"}[$__rate_interval]))`, "{{broker}} {{status}}"}}},
		{title: "Brokers ready", description: "1: the broker's catalog is loaded (ServiceBroker Ready); 0: it is not.", stat: true,
			queries: []query{{`max by (broker) (lockstep_servicebroker_ready{` + brokers + `})`, "{{broker}}"}}},
		{title: "Catalog age", unit: "s", description: "Time since each broker's catalog was last fetched successfully.",
			queries: []query{{`time() - max by (broker) (lockstep_servicebroker_catalog_sync_timestamp_seconds{` + brokers + `})`, "{{broker}}"}}},
	}},
	{"Operations", []panel{
		{title: "Operations under way", unit: "short", description: "BrokerOperations not final yet, by phase, and objects whose operation's outcome the broker has not told yet.",
			queries: []query{
				{`max by (phase) (lockstep_operation_records{phase=~"Pending|InProgress|Succeeded|Orphaned"})`, "{{phase}}"},
				{`max by (kind) (lockstep_object_conditions{condition="InSync",reason="OutcomeUnknown"})`, "{{kind}} outcome unknown"},
			}},
		{title: "Oldest operation under way", unit: "s", description: "Age of the oldest BrokerOperation in each phase that is not final.",
			queries: []query{{`time() - min by (phase) (lockstep_operation_oldest_start_timestamp_seconds)`, "{{phase}}"}}},
		{title: "Operation phases", unit: "ops", description: "BrokerOperations entering each phase per second; Orphaned and Compensated are changes the API server never persisted, undone.",
			queries: []query{{`sum by (phase) (rate(lockstep_operation_phase_transitions_total[$__rate_interval]))`, "{{phase}}"}}},
	}},
	{"Drift and resync", []panel{
		{title: "Objects not in sync", unit: "short", description: "Instances and bindings whose InSync condition is not True, by reason.",
			queries: []query{{`max by (kind, status, reason) (lockstep_object_conditions{condition="InSync",status!="True"})`, "{{kind}} {{status}} {{reason}}"}}},
		{title: "Resync results", unit: "ops", description: "Objects read again from their broker per second, by result.",
			queries: []query{{`sum by (kind, result) (rate(lockstep_resync_results_total[$__rate_interval]))`, "{{kind}} {{result}}"}}},
		{title: "Drift corrections", unit: "ops", description: "Corrections resync started, and the ones the broker refused.",
			queries: []query{{`sum by (kind, outcome) (rate(lockstep_resync_corrections_total[$__rate_interval]))`, "{{kind}} {{outcome}}"}}},
	}},
	{"Journal and certificate", []panel{
		{title: "Journal size", unit: "short", description: "BrokerOperations in the cluster, by phase.",
			queries: []query{{`max by (phase) (lockstep_operation_records)`, "{{phase}}"}}},
		{title: "Records pruned", unit: "ops", description: "Final BrokerOperations removed: kept (beyond LOCKSTEP_KEEP_OPERATIONS) or expired (after LOCKSTEP_OPERATION_RETENTION).",
			queries: []query{{`sum by (reason) (rate(lockstep_operation_records_pruned_total[$__rate_interval]))`, "{{reason}}"}}},
		{title: "Certificate expires in", unit: "s", description: "Time left before the webhook server's serving certificate expires.", stat: true,
			queries: []query{{`min(lockstep_webhook_certificate_expiry_timestamp_seconds) - time()`, "expires in"}}},
	}},
}

// datasource is the dashboard's Prometheus, chosen when it is imported.
var datasource = common.DataSourceRef{Type: ptr("prometheus"), Uid: ptr("${datasource}")}

func ptr[T any](v T) *T { return &v }

// buildDashboard builds the Grafana dashboard from rows.
func buildDashboard() (dashboard.Dashboard, error) {
	b := dashboard.NewDashboardBuilder("lockstep").
		Uid("lockstep").
		Description("lockstep: admission, brokers, operations, drift and the journal. Generated by hack/monitoring.").
		Tags([]string{"lockstep", "kubernetes", "open-service-broker"}).
		Refresh("30s").
		Time("now-6h", "now").
		Timezone(common.TimeZoneBrowser).
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		WithVariable(dashboard.NewDatasourceVariableBuilder("datasource").Label("Prometheus").Type("prometheus")).
		WithVariable(dashboard.NewQueryVariableBuilder("broker").Label("Broker").
			Datasource(datasource).
			Query(dashboard.StringOrMap{String: ptr("label_values(lockstep_broker_request_duration_seconds_count, broker)")}).
			Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
			Multi(true).IncludeAll(true).AllValue(".*"))
	// Every panel and row has its own id, in the order shown.
	id := uint32(0)
	next := func() uint32 { id++; return id }
	for _, r := range rows {
		b = b.WithRow(dashboard.NewRowBuilder(r.title).Id(next()))
		for _, p := range r.panels {
			b = b.WithPanel(p.build(next()))
		}
	}
	return b.Build()
}

func (p panel) build(id uint32) cog.Builder[dashboard.Panel] {
	targets := make([]cog.Builder[variants.Dataquery], 0, len(p.queries))
	for _, q := range p.queries {
		targets = append(targets, prometheus.NewDataqueryBuilder().Expr(q.expr).LegendFormat(q.legend).Datasource(datasource))
	}
	if p.stat {
		return stat.NewPanelBuilder().Id(id).Title(p.title).Description(p.description).Unit(p.unit).
			Datasource(datasource).Targets(targets).Height(8).Span(8)
	}
	return timeseries.NewPanelBuilder().Id(id).Title(p.title).Description(p.description).Unit(p.unit).Min(0).
		Datasource(datasource).Targets(targets).Height(8).Span(8).
		Legend(common.NewVizLegendOptionsBuilder().ShowLegend(true).DisplayMode(common.LegendDisplayModeList).Placement(common.LegendPlacementBottom)).
		Tooltip(common.NewVizTooltipOptionsBuilder().Mode(common.TooltipDisplayModeMulti).Sort(common.SortOrderDescending))
}
