package suite

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/lockstep-dev/lockstep/bench/env"
	"github.com/lockstep-dev/lockstep/bench/loadgen"
	"github.com/lockstep-dev/lockstep/bench/report"
)

func TestTypedKindFigures(t *testing.T) {
	sample := func(name string, labels map[string]string, v float64) env.Sample {
		return env.Sample{Name: name, Labels: labels, Value: v}
	}
	const rest = "rest_client_requests_total"
	before := &scrapes{lockstep: env.Metrics{
		sample(rest, map[string]string{"method": "GET", "code": "200"}, 10),
		sample(reconcileTotal, map[string]string{"controller": marketplaceController, "result": "success"}, 3),
		sample(reconcileSecondsSum, map[string]string{"controller": marketplaceController}, 1),
		sample(marketplaceWrites, nil, 5),
	}}
	after := &scrapes{
		lockstep: env.Metrics{
			sample(rest, map[string]string{"method": "GET", "code": "200"}, 12),
			sample(rest, map[string]string{"method": "GET", "code": "429"}, 4),
			sample(rest, map[string]string{"method": "PATCH", "code": "201"}, 0),
			sample(reconcileTotal, map[string]string{"controller": marketplaceController, "result": "success"}, 5),
			sample(reconcileTotal, map[string]string{"controller": "other", "result": "error"}, 9),
			sample(reconcileSecondsSum, map[string]string{"controller": marketplaceController}, 3.5),
			sample(marketplaceWrites, nil, 15),
		},
		apiserver: env.Metrics{
			sample("apiserver_request_duration_seconds_count", map[string]string{"verb": "APPLY", "resource": "customresourcedefinitions", "dry_run": "All"}, 2),
			sample("apiserver_request_duration_seconds_sum", map[string]string{"verb": "APPLY", "resource": "customresourcedefinitions", "dry_run": "All"}, 0.05),
			sample("apiserver_request_duration_seconds_count", map[string]string{"verb": "APPLY", "resource": "clusterroles"}, 4),
			sample("apiserver_request_duration_seconds_sum", map[string]string{"verb": "APPLY", "resource": "clusterroles"}, 0.2),
			sample("apiserver_request_duration_seconds_count", map[string]string{"verb": "GET", "resource": "clusterroles"}, 7),
			sample("apiserver_request_duration_seconds_count", map[string]string{"verb": "PATCH", "resource": "serviceofferings"}, 7),
		},
	}
	before.apiserver = env.Metrics{}

	assert.Equal(t, "GET 200 × 2; GET 429 × 4", lockstepRequests(before, after), "methods and answers that gained requests")
	assert.Equal(t, "2 success", marketplaceReconciles(before, after), "the marketplace controller's only")
	assert.Equal(t, dur(2500*time.Millisecond), marketplaceTime(before, after))
	assert.Equal(t, "10", marketplaceWritesBetween(before, after))
	assert.Equal(t, "APPLY clusterroles 4 × 50.00 ms; APPLY customresourcedefinitions (dry run) 2 × 25.00 ms", typedKindWrites(before, after),
		"writes of CRDs and ClusterRoles only")
	for _, f := range []func(before, after *scrapes) string{lockstepRequests, marketplaceReconciles, marketplaceTime, marketplaceWritesBetween, typedKindWrites} {
		assert.Equal(t, "not read", f(nil, after))
	}
	assert.Equal(t, "1.50x", times(3, 2))
	assert.Equal(t, "n/a", times(3, 0))
}

func TestRatioTarget(t *testing.T) {
	ms := func(ds ...int) loadgen.Result {
		var r loadgen.Result
		for _, d := range ds {
			r.Latencies = append(r.Latencies, time.Duration(d)*time.Millisecond)
		}
		return r
	}
	met := ratioTarget("x", 1.05, ms(10, 10, 10), ms(10, 10, 10))
	assert.Equal(t, report.Met, met.Status)
	assert.Equal(t, "<= 1.05x (p50 and p99)", met.Want)
	missed := ratioTarget("x", 2, ms(10, 10, 30), ms(10, 10, 10))
	assert.Equal(t, report.Missed, missed.Status, "p99 3x")
	assert.Equal(t, "<= 2.0x (p50 and p99)", missed.Want, "the wording of the end-to-end targets")
	withErrors := ms(10)
	withErrors.Errors = 1
	assert.Equal(t, report.Missed, ratioTarget("x", 2, withErrors, ms(10)).Status, "an unexpected answer misses")
}
