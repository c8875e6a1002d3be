package suite

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/bench/env"
	"github.com/lockstep-dev/lockstep/internal/admission"
)

// cost is what the metrics say happened between two scrapes: lockstep's
// (controller-runtime's webhook latency histograms: server-side handler
// time, without TLS and HTTP; client-go's request counter: every request
// lockstep made to kube-apiserver, by method) and kube-apiserver's (its
// request latency by verb and resource, and how long it waited for each
// admission webhook).
type cost struct {
	validate, guard handlerCost
	api             apiRequests
	// writes are kube-apiserver's writes of the resources lockstep writes,
	// by "VERB resource[/subresource]".
	writes map[string]handlerCost
	// guardCalls is the status guard as kube-apiserver called it.
	guardCalls handlerCost
}

// scrapes are lockstep's and kube-apiserver's metrics at one moment.
type scrapes struct{ lockstep, apiserver env.Metrics }

// apiserverMetrics are the kube-apiserver metric families cost reads.
var apiserverMetrics = []string{"apiserver_request_duration_seconds_", "apiserver_admission_webhook_admission_duration_seconds_"}

// lockstepWrites are the resources lockstep writes (the benchmark itself
// writes only serviceinstances, without a subresource).
var lockstepWrites = map[string]bool{
	"leases": true, "brokeroperations": true, "brokeroperations/status": true, "serviceinstances/status": true, "events": true,
}

// apiRequests counts requests to kube-apiserver by HTTP method.
type apiRequests map[string]float64

// handlerCost is one webhook path's requests and total handler time.
type handlerCost struct {
	count float64
	total time.Duration
}

func (h handlerCost) mean() time.Duration {
	if h.count == 0 {
		return 0
	}
	return time.Duration(float64(h.total) / h.count)
}

// scrape reads lockstep's and kube-apiserver's metrics; nil when they
// cannot be read (the cost table then lacks that row instead of failing
// the benchmark).
func (s *Suite) scrape(ctx context.Context) *scrapes {
	l, err := env.ScrapeMetrics(ctx, s.Env.MetricsURL())
	if err != nil {
		s.Logf("could not read lockstep's metrics: %v", err)
		return nil
	}
	a, err := s.Env.APIServerMetrics(ctx, apiserverMetrics...)
	if err != nil {
		s.Logf("could not read kube-apiserver's metrics: %v", err)
		return nil
	}
	return &scrapes{lockstep: l, apiserver: a}
}

// histogram is the difference of a histogram's count and sum between two
// scrapes, for the samples matching sel.
func histogram(before, after env.Metrics, name string, sel map[string]string) handlerCost {
	count := after.Sum(name+"_count", sel) - before.Sum(name+"_count", sel)
	sum := after.Sum(name+"_sum", sel) - before.Sum(name+"_sum", sel)
	return handlerCost{count: count, total: time.Duration(sum * float64(time.Second))}
}

// costBetween is the difference of two scrapes.
func costBetween(before, after *scrapes) cost {
	const webhookLatency = "controller_runtime_webhook_latency_seconds"
	c := cost{
		validate:   histogram(before.lockstep, after.lockstep, webhookLatency, map[string]string{"webhook": admission.ValidateInstancePath}),
		guard:      histogram(before.lockstep, after.lockstep, webhookLatency, map[string]string{"webhook": admission.ValidateStatusPath}),
		guardCalls: histogram(before.apiserver, after.apiserver, "apiserver_admission_webhook_admission_duration_seconds", map[string]string{"name": "status.validate.lockstep.dev"}),
		api:        apiRequests{},
		writes:     map[string]handlerCost{},
	}
	for _, method := range labelValues(after.lockstep, "rest_client_requests_total", "method") {
		sel := map[string]string{"method": method}
		if d := after.lockstep.Sum("rest_client_requests_total", sel) - before.lockstep.Sum("rest_client_requests_total", sel); d > 0 {
			c.api[method] = d
		}
	}
	seen := map[string]bool{}
	for _, sample := range after.apiserver {
		if sample.Name != "apiserver_request_duration_seconds_count" {
			continue
		}
		verb, resource := sample.Labels["verb"], sample.Labels["resource"]
		if sub := sample.Labels["subresource"]; sub != "" {
			resource += "/" + sub
		}
		key := verb + " " + resource
		if seen[key] || !lockstepWrites[resource] || (verb != "POST" && verb != "PUT" && verb != "PATCH" && verb != "DELETE") {
			continue
		}
		seen[key] = true
		sel := map[string]string{"verb": verb, "resource": sample.Labels["resource"], "subresource": sample.Labels["subresource"]}
		if h := histogram(before.apiserver, after.apiserver, "apiserver_request_duration_seconds", sel); h.count > 0 {
			c.writes[key] = h
		}
	}
	return c
}

// labelValues lists the values a label takes in the samples named name.
func labelValues(m env.Metrics, name, label string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range m {
		if v := s.Labels[label]; s.Name == name && !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	sort.Strings(out)
	return out
}

// writesPerOperation formats kube-apiserver's writes per operation with
// their mean server time, most expensive first, and their total.
func (c cost) writesPerOperation(ops int) string {
	if len(c.writes) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(c.writes))
	var total time.Duration
	for k, h := range c.writes {
		total += h.total
		if h.count/float64(ops) >= 0.05 { // rarer writes (a lease taken over, say) only in the total
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return c.writes[keys[i]].total > c.writes[keys[j]].total })
	parts := make([]string, 0, len(keys)+1)
	for _, k := range keys {
		h := c.writes[k]
		parts = append(parts, fmt.Sprintf("%s %.1f × %s", k, h.count/float64(ops), dur(h.mean())))
	}
	return fmt.Sprintf("%s per operation in all: ", dur(total/time.Duration(ops))) + strings.Join(parts, "; ")
}

// total is the number of requests, of every method.
func (a apiRequests) total() float64 {
	total := 0.0
	for _, n := range a {
		total += n
	}
	return total
}

// perOperation formats the requests per operation, by method.
func (a apiRequests) perOperation(ops int) string {
	return a.per(float64(ops), 1, "in all")
}

// per formats the requests divided by divisor, with digits decimals, the
// sum first (followed by all) and then by method.
func (a apiRequests) per(divisor float64, digits int, all string) string {
	if len(a) == 0 {
		return "none"
	}
	var methods []string
	for m := range a {
		methods = append(methods, m)
	}
	sort.Strings(methods)
	parts := []string{fmt.Sprintf("%.*f %s", digits, a.total()/divisor, all)}
	for _, m := range methods {
		parts = append(parts, fmt.Sprintf("%s %.*f", m, digits, a[m]/divisor))
	}
	return strings.Join(parts, ", ")
}
