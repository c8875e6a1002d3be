package suite

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/bench/env"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/test/framework"
)

// ResyncSettings are lockstep's resync settings for the scale benchmark's
// resync pass, given to it as LOCKSTEP_RESYNC_* variables.
type ResyncSettings struct {
	// Interval is LOCKSTEP_RESYNC_INTERVAL: short enough that the
	// instances are due faster than QPS lets them be fetched, so that a
	// pass runs at the per-broker limit.
	Interval time.Duration
	// QPS is LOCKSTEP_RESYNC_BROKER_QPS, Concurrency
	// LOCKSTEP_RESYNC_BROKER_CONCURRENCY (also the limiter's burst).
	QPS         float64
	Concurrency int
}

// environ is the settings as lockstep reads them.
func (r ResyncSettings) environ() []string {
	return []string{
		"LOCKSTEP_RESYNC_INTERVAL=" + r.Interval.String(),
		"LOCKSTEP_RESYNC_BROKER_QPS=" + strconv.FormatFloat(r.QPS, 'f', -1, 64),
		"LOCKSTEP_RESYNC_BROKER_CONCURRENCY=" + strconv.Itoa(r.Concurrency),
	}
}

// String names the settings in the report.
func (r ResyncSettings) String() string {
	return fmt.Sprintf("interval %s, %s fetches/s and %d at once per broker", r.Interval, strconv.FormatFloat(r.QPS, 'f', -1, 64), r.Concurrency)
}

// resyncOff turns resync off, for the measurements it must not take part
// in.
const resyncOff = "LOCKSTEP_RESYNC_INTERVAL=0"

// countSample is the broker's count of instance fetches at one moment.
type countSample struct {
	at    time.Time
	count int
}

// fetchRate is count fetches over window, per second.
func fetchRate(count int, window time.Duration) float64 {
	if window <= 0 {
		return 0
	}
	return float64(count) / window.Seconds()
}

// withinLimit reports whether count fetches over window respect a token
// bucket of qps per second and burst: at most qps × window + burst.
func withinLimit(count int, window time.Duration, qps float64, burst int) bool {
	return float64(count) <= qps*window.Seconds()+float64(burst)
}

// peakRate is the highest rate between two samples at least span apart,
// each window starting at a sample and ending at the first sample span or
// more later; 0 when no two samples are that far apart.
func peakRate(samples []countSample, span time.Duration) float64 {
	peak := 0.0
	j := 0
	for i := range samples {
		for j < len(samples) && samples[j].at.Sub(samples[i].at) < span {
			j++
		}
		if j == len(samples) {
			break
		}
		peak = max(peak, fetchRate(samples[j].count-samples[i].count, samples[j].at.Sub(samples[i].at)))
	}
	return peak
}

// covered counts the ids of want that calls fetched at least once.
func covered(calls []fakebroker.Call, want map[string]bool) int {
	seen := make(map[string]bool, len(want))
	for _, c := range calls {
		if want[c.InstanceID] {
			seen[c.InstanceID] = true
		}
	}
	return len(seen)
}

// resyncPass is what one resync pass over the scale benchmark's instances
// cost.
type resyncPass struct {
	settings ResyncSettings
	// window is the pass: from the first scrape until every instance was
	// fetched at least once since.
	window time.Duration
	// fetches are the broker's instance fetches in the window (every
	// object on that broker), peak the highest rate over a second.
	fetches int
	peak    float64
	// api are lockstep's requests to kube-apiserver in the window, by
	// method; writes kube-apiserver's write requests (see writesBetween).
	api    apiRequests
	writes map[string]float64
	// results are lockstep_resync_results_total's increase for
	// ServiceInstances in the window, by result.
	results map[string]float64
	// cpu is lockstep's CPU time (user and system) in the window.
	cpu time.Duration
	// started is lockstep's memory when the window opened (after the
	// start-up reconcile), memory when it closed.
	started, memory framework.Memory
}

func (p resyncPass) rate() float64 { return fetchRate(p.fetches, p.window) }

// cpuUse formats lockstep's CPU time in the window: in all, as a share of
// one core, and per fetch.
func (p resyncPass) cpuUse() string {
	if p.window <= 0 || p.fetches == 0 {
		return dur(p.cpu)
	}
	return fmt.Sprintf("%s (%.0f%% of one core), %s per fetch", dur(p.cpu), 100*p.cpu.Seconds()/p.window.Seconds(), dur(p.cpu/time.Duration(p.fetches)))
}

// statusWrites are kube-apiserver's writes of ServiceInstance status in
// the window, any verb.
func (p resyncPass) statusWrites() float64 {
	total := 0.0
	for k, n := range p.writes {
		if strings.HasSuffix(k, " serviceinstances/status") {
			total += n
		}
	}
	return total
}

// writesBetween are kube-apiserver's write requests between two scrapes of
// its metrics, of every resource and from every client, by "VERB
// resource[/subresource]".
func writesBetween(before, after env.Metrics) map[string]float64 {
	return requestsBetween(before, after, func(verb string) bool {
		return verb == "POST" || verb == "PUT" || verb == "PATCH" || verb == "DELETE" || verb == "APPLY"
	})
}

// requestsBetween are kube-apiserver's requests of the verbs keep accepts
// between two scrapes of its metrics, of every resource and from every
// client, by "VERB resource[/subresource]".
func requestsBetween(before, after env.Metrics, keep func(verb string) bool) map[string]float64 {
	const requests = "apiserver_request_duration_seconds_count"
	out := map[string]float64{}
	for _, sample := range after {
		verb := sample.Labels["verb"]
		if sample.Name != requests || !keep(verb) {
			continue
		}
		key := verb + " " + sample.Labels["resource"]
		if sub := sample.Labels["subresource"]; sub != "" {
			key += "/" + sub
		}
		if _, done := out[key]; done {
			continue
		}
		sel := map[string]string{"verb": verb, "resource": sample.Labels["resource"], "subresource": sample.Labels["subresource"]}
		if d := after.Sum(requests, sel) - before.Sum(requests, sel); d > 0 {
			out[key] = d
		}
	}
	return out
}

// counts formats counts by key, most frequent first, "none" when empty.
func counts(m map[string]float64) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %.0f", k, m[k])
	}
	return strings.Join(parts, ", ")
}

// measureResync restarts lockstep with resync at settings and measures one
// pass over the instances ids (held by broker b): the broker's fetches per
// second, lockstep's requests and kube-apiserver's writes in the pass, and
// lockstep's memory at its end. Fetches are counted at the broker and
// everything else through metrics, so that nothing here depends on how
// lockstep's resync is built.
func (s *Suite) measureResync(ctx context.Context, b *fakebroker.Broker, ids map[string]bool, settings ResyncSettings) (resyncPass, error) {
	p := resyncPass{settings: settings}
	n := len(ids)
	s.Logf("scale: restarting lockstep with resync (%s)", settings)
	if err := s.Env.StopLockstep(); err != nil {
		return p, err
	}
	if err := s.Env.StartLockstep(ctx, settings.environ()...); err != nil {
		return p, err
	}
	// The instance reconciler's start-up pass over every instance is over
	// before the window opens; the resync is then under way.
	if err := s.waitReconciled(ctx, n, false); err != nil {
		return p, err
	}
	started, err := s.Env.Lockstep.Memory()
	if err != nil {
		return p, err
	}
	p.started = started
	before := s.scrape(ctx)
	if before == nil {
		return p, fmt.Errorf("no metrics to compare the resync pass with")
	}
	cpuBefore, err := s.Env.Lockstep.CPU()
	if err != nil {
		return p, err
	}
	first := b.Count(fakebroker.OpGetInstance)
	samples := []countSample{{at: time.Now(), count: first}}
	seen := 0
	err = env.Poll(ctx, s.Sizes.StepTimeout, 100*time.Millisecond, func(context.Context) (bool, error) {
		now, count := time.Now(), b.Count(fakebroker.OpGetInstance)
		samples = append(samples, countSample{at: now, count: count})
		if count-first < n {
			return false, nil // not even one fetch per instance yet
		}
		seen = covered(b.Calls(fakebroker.OpGetInstance)[first:], ids)
		return seen == n, nil
	})
	if err != nil {
		return p, fmt.Errorf("resync fetched %d of %d instances: %w", seen, n, err)
	}
	cpuAfter, err := s.Env.Lockstep.CPU()
	if err != nil {
		return p, err
	}
	after := s.scrape(ctx)
	if after == nil {
		return p, fmt.Errorf("no metrics at the end of the resync pass")
	}
	last := samples[len(samples)-1]
	p.window, p.fetches = last.at.Sub(samples[0].at), last.count-first
	p.peak = peakRate(samples, time.Second)
	p.cpu = cpuAfter - cpuBefore
	p.api, p.writes = costBetween(before, after).api, writesBetween(before.apiserver, after.apiserver)
	p.results = map[string]float64{}
	const results = "lockstep_resync_results_total"
	for _, result := range labelValues(after.lockstep, results, "result") {
		sel := map[string]string{"kind": "ServiceInstance", "result": result}
		if d := after.lockstep.Sum(results, sel) - before.lockstep.Sum(results, sel); d > 0 {
			p.results[result] = d
		}
	}
	if p.memory, err = s.Env.Lockstep.Memory(); err != nil {
		return p, err
	}
	return p, nil
}
