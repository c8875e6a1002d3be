package main

import (
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
)

// Every replica serves the same gauges read from its cache
// (lockstep_servicebroker_*, lockstep_object_conditions,
// lockstep_operation_*): the rules take their maximum (or minimum), never
// their sum. Counters and histograms are per replica: the rules sum them.
// controller-runtime's metrics are shared with every other
// controller-runtime program Prometheus scrapes: the rules select
// lockstep's by its webhook paths and its leader election lease; the
// absent-target rule selects lockstep's scrape job.

// job is the job label Prometheus gives lockstep's targets: the Prometheus
// Operator names a ServiceMonitor's job after the Service it selects
// (lockstep-webhook, in deploy/ and the Helm chart). The chart writes its
// value monitoring.job in its place; with a plain rules file, edit it.
const job = "lockstep-webhook"

// runbookURL is where every alert's runbook_url points: the page
// docs/runbooks/<alert>.md of lockstep's repository. The chart writes its
// value monitoring.prometheusRule.runbookURL in its place (a copy of the
// pages elsewhere).
const runbookURL = "https://github.com/lockstep-dev/lockstep/blob/main/docs/runbooks/"

// runbooks is where the runbooks are, in the repository.
const runbooks = "docs/runbooks"

// Webhook selectors: every path lockstep serves its webhooks on, the
// typed kinds' (/validate-services-lockstep-dev-v1alpha1-typed) included,
// and those of the validating webhooks alone (the ones that call brokers,
// with the API server's timeout of 30s).
const (
	allWebhooks        = `webhook=~"/(validate|mutate)-(services-)?lockstep-dev-.*"`
	validatingWebhooks = `webhook=~"/validate-(services-)?lockstep-dev-.*"`
)

// alert is one alerting rule with what a person needs at 3 a.m.: what
// happened and the way out (its runbook, docs/runbooks/<name>.md, says
// how to confirm it and what to do).
type alert struct {
	name, expr  string
	wait        time.Duration
	severity    string
	summary     string
	description string
}

// runbook is the alert's runbook_url.
func (a alert) runbook() string { return runbookURL + a.name + ".md" }

// alerts are lockstep's alerting rules, in the order of docs/monitoring.md.
var alerts = []alert{
	{
		// kube-prometheus alerts the same way on every control plane
		// component: no target of the job answers (up == 1), or none is
		// scraped at all. LockstepNoLeader needs a scraped replica to
		// fire; this one does not.
		name:     "LockstepDown",
		expr:     `absent(up{job="` + job + `"} == 1)`,
		wait:     5 * time.Minute,
		severity: "critical",
		summary:  "No lockstep replica is up",
		description: "For 5 minutes Prometheus has scraped no lockstep replica that answers (up{job=\"" + job + "\"}): with failurePolicy " +
			"Fail, the API server refuses every create, spec change and delete of ServiceInstances, ServiceBindings and typed kinds " +
			"while no replica serves the webhooks. Check lockstep's pods (kubectl get pods -l app.kubernetes.io/name=lockstep in its namespace) " +
			"and that Prometheus still scrapes them.",
	},
	{
		name: "LockstepBrokerUnreachable",
		expr: `sum by (broker) (rate(lockstep_broker_request_duration_seconds_count{status="none"}[5m]))
  / sum by (broker) (rate(lockstep_broker_request_duration_seconds_count[5m])) > 0.5`,
		wait: 5 * time.Minute, severity: "critical",
		summary: "Broker {{ $labels.broker }} does not answer",
		description: "More than half of lockstep's requests to ServiceBroker {{ $labels.broker }} got no answer " +
			"(connection refused, timeout, TLS) for 5 minutes: changes of its instances and bindings are refused " +
			"and nothing changes. Check the broker and the network to it (kubectl describe servicebroker {{ $labels.broker }}); " +
			"to delete objects without it, annotate them lockstep.dev/reconcile-policy=detach-on-delete.",
	},
	{
		name:     "LockstepCatalogSyncFailing",
		expr:     `max by (broker) (lockstep_servicebroker_ready) == 0`,
		wait:     15 * time.Minute,
		severity: "warning",
		summary:  "The catalog of broker {{ $labels.broker }} cannot be loaded",
		description: "ServiceBroker {{ $labels.broker }} has not been Ready for 15 minutes: lockstep could not fetch its catalog " +
			"(kubectl describe servicebroker {{ $labels.broker }} says why: unreachable, credentials, a catalog it cannot read). " +
			"New instances of its services are refused until it loads.",
	},
	{
		name: "LockstepOperationOutcomeUnknown",
		expr: `max by (kind) (lockstep_object_conditions{condition="InSync",reason="OutcomeUnknown"}) > 0`,
		wait: 30 * time.Minute, severity: "warning",
		summary: "{{ $value }} {{ $labels.kind }}(s) wait for a broker to say how an operation ended",
		description: "For 30 minutes, some {{ $labels.kind }}s have had InSync Unknown (OutcomeUnknown): a broker accepted a change " +
			"and has not said how it ended. lockstep keeps asking; find them with kubectl lockstep why namespace NS, " +
			"and check the broker's last_operation endpoint.",
	},
	{
		name: "LockstepOperationInProgressTooLong",
		expr: `time() - min by (phase) (lockstep_operation_oldest_start_timestamp_seconds{phase="InProgress"}) > 3600`,
		wait: 5 * time.Minute, severity: "warning",
		summary: "A broker operation has been in progress for more than an hour",
		description: "The oldest BrokerOperation in phase InProgress started {{ $value | humanizeDuration }} ago: its broker still " +
			"works on it (or says so). Its object cannot change meanwhile. kubectl get brokeroperations -A shows it; " +
			"kubectl lockstep history OBJECT shows its object's operations.",
	},
	{
		name: "LockstepOperationNotSettled",
		expr: `time() - min by (phase) (lockstep_operation_oldest_start_timestamp_seconds{phase=~"Pending|Succeeded|Orphaned"}) > 900`,
		wait: 5 * time.Minute, severity: "warning",
		summary: "A broker operation has not been settled for 15 minutes ({{ $labels.phase }})",
		description: "lockstep settles a {{ $labels.phase }} BrokerOperation within seconds (commits it, or undoes what the API " +
			"server never persisted). One has waited {{ $value | humanizeDuration }}: is the elected replica running " +
			"(LockstepNoLeader)? Its log says what fails.",
	},
	{
		name: "LockstepDriftNotCorrected",
		expr: `max by (kind, reason) (lockstep_object_conditions{condition="InSync",status="False",reason=~"PlanDrift|ParametersDrift"}) > 0`,
		wait: 30 * time.Minute, severity: "warning",
		summary: "{{ $value }} {{ $labels.kind }}(s) differ from their broker ({{ $labels.reason }})",
		description: "For 30 minutes, some {{ $labels.kind }}s have held another plan or other parameters at their broker than " +
			"lockstep applied: under the observe policy drift is only reported, under manage the broker refused the " +
			"correction. kubectl lockstep why OBJECT shows both values and the broker's answer.",
	},
	{
		name: "LockstepWebhookNearTimeout",
		expr: `1 - sum by (webhook) (rate(controller_runtime_webhook_latency_seconds_bucket{` + validatingWebhooks + `,le="10"}[5m]))
  / sum by (webhook) (rate(controller_runtime_webhook_latency_seconds_count{` + validatingWebhooks + `}[5m])) > 0.05`,
		wait: 10 * time.Minute, severity: "warning",
		summary: "lockstep's webhook {{ $labels.webhook }} often takes more than 10 seconds",
		description: "More than 5% of the requests to {{ $labels.webhook }} took more than 10s for 10 minutes; the API server gives " +
			"up after 30s (timeoutSeconds) and lockstep's budget is 25s (LOCKSTEP_ADMISSION_BUDGET). A slow broker is the " +
			"usual cause: lockstep_broker_request_duration_seconds shows which.",
	},
	{
		name:     "LockstepCertificateExpiresSoon",
		expr:     `min(lockstep_webhook_certificate_expiry_timestamp_seconds) - time() < 7 * 86400`,
		wait:     time.Hour,
		severity: "warning",
		summary:  "lockstep's webhook certificate expires in {{ $value | humanizeDuration }}",
		description: "The serving certificate of lockstep's webhook server expires within a week; cert-manager renews it 15 days " +
			"before. When it expires the API server cannot call the webhooks and, with failurePolicy Fail, no instance or " +
			"binding can change. Check the Certificate lockstep-webhook (kubectl describe certificate -n NAMESPACE) or renew " +
			"the Secret lockstep-webhook-tls.",
	},
	{
		name:     "LockstepCertificateExpiresSoon",
		expr:     `min(lockstep_webhook_certificate_expiry_timestamp_seconds) - time() < 86400`,
		severity: "critical",
		summary:  "lockstep's webhook certificate expires in {{ $value | humanizeDuration }}",
		description: "The serving certificate of lockstep's webhook server expires within a day: renew the Secret " +
			"lockstep-webhook-tls now (lockstep reloads it without a restart).",
	},
	{
		name:     "LockstepNoLeader",
		expr:     `max(leader_election_master_status{name="lockstep-reconcilers"}) < 1`,
		wait:     5 * time.Minute,
		severity: "warning",
		summary:  "No lockstep replica leads the reconcilers",
		description: "For 5 minutes no replica has held the Lease lockstep-reconcilers: admission still works, but nothing " +
			"commits operations, follows operations in progress, corrects drift or carries out finalizers.",
	},
}

// ruleGroups is the rules file: one group, evaluated every 30s.
func ruleGroups() rulefmt.RuleGroups {
	group := rulefmt.RuleGroup{Name: "lockstep", Interval: model.Duration(30 * time.Second)}
	for _, a := range alerts {
		group.Rules = append(group.Rules, rulefmt.Rule{
			Alert:       a.name,
			Expr:        a.expr,
			For:         model.Duration(a.wait),
			Labels:      map[string]string{"severity": a.severity},
			Annotations: map[string]string{"summary": a.summary, "description": a.description, "runbook_url": a.runbook()},
		})
	}
	return rulefmt.RuleGroups{Groups: []rulefmt.RuleGroup{group}}
}
