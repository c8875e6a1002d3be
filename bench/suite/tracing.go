package suite

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/bench/env"
	"github.com/lockstep-dev/lockstep/bench/loadgen"
	"github.com/lockstep-dev/lockstep/bench/report"
	"github.com/lockstep-dev/lockstep/internal/admission"
	"github.com/lockstep-dev/lockstep/test/framework"
)

// Tracing measures what OpenTelemetry tracing costs an admission that
// calls the broker: provision, update and deprovision through lockstep's
// validating webhook, at 0s broker latency, alternating request by
// request between three lockstep replicas beside the leading one, on one
// control plane: one
// built without tracing (-tags lockstep_notracing, which makes
// internal/tracing do nothing), one with tracing off (lockstep as
// deployed: no OTEL_* variable), and one with tracing on (every request a
// trace, exported over OTLP gRPC to a collector in the benchmark's
// process, which counts the spans).
func (s *Suite) Tracing(ctx context.Context) (report.Section, error) {
	n, w := s.Sizes.Tracing, max(s.Sizes.Warmup/10, 1)
	sec := report.Section{Title: "10. Tracing: lockstep without it, with it off, with it on", Text: []string{
		fmt.Sprintf("%d instances per arm are provisioned, then updated (parameters), then deprovisioned, one request at a time, the three "+
			"arms alternating request by request, each an AdmissionReview over TLS to the validating webhook of its own lockstep process, all three "+
			"against the same kube-apiserver and the same test broker answering at once (0s broker latency). Without: `cmd/webhook` built with "+
			"`-tags lockstep_notracing`, where every function of `internal/tracing` does nothing (no span, no traceparent, the webhooks "+
			"registered as they are). Off: lockstep as deployed, no `OTEL_*` variable. On: `OTEL_TRACES_EXPORTER=otlp` over gRPC to a "+
			"collector in the benchmark's process (it counts the spans and keeps none), the SDK's default sampler and batching: every "+
			"request is a trace (it carries no traceparent), every OSB request carries one.", n),
		"All three are replicas beside the lockstep of the other benchmarks, which holds the lead, commits every arm's operations and " +
			"serves kube-apiserver's status-guard calls, so that the three arms do the same work; the benchmark waits for it between " +
			"steps, untimed, as the broker-path benchmark does.",
	}}
	b, err := s.acmeBroker(ctx)
	if err != nil {
		return sec, err
	}
	b.SetLatency(0)
	const ns = "bench-tracing"
	if err := s.Env.Namespace(ctx, ns, true); err != nil {
		return sec, err
	}
	defer s.cleanOperations(ns)

	s.Logf("tracing: building lockstep without tracing")
	untracedBin, err := s.Env.BuildWebhook(ctx, "notracing", "-tags", "lockstep_notracing")
	if err != nil {
		return sec, err
	}
	untraced, err := s.Env.StartReplica(ctx, "untraced", untracedBin)
	if err != nil {
		return sec, err
	}
	defer stopReplica(s, untraced)
	off, err := s.Env.StartReplica(ctx, "off", "")
	if err != nil {
		return sec, err
	}
	defer stopReplica(s, off)
	sink, err := framework.StartOTLPSink()
	if err != nil {
		return sec, err
	}
	defer sink.Stop()
	traced, err := s.Env.StartReplica(ctx, "traced", "", "OTEL_TRACES_EXPORTER=otlp", "OTEL_EXPORTER_OTLP_PROTOCOL=grpc",
		"OTEL_EXPORTER_OTLP_ENDPOINT=http://"+sink.Endpoint())
	if err != nil {
		return sec, err
	}
	defer stopReplica(s, traced)
	rc, err := loadgen.NewReviewClient(s.Env.CA, 35*time.Second)
	if err != nil {
		return sec, err
	}
	defer rc.Close()

	path := admission.ValidateInstancePath
	processes := []struct{ name, url string }{
		{"without", untraced.URL(path)}, {"off", off.URL(path)}, {"on", traced.URL(path)},
	}
	objects := make([][]*v1alpha1.ServiceInstance, len(processes))
	for i, p := range processes {
		if objects[i], err = s.pendingInstances(ctx, ns, "tr-"+p.name, w+n); err != nil {
			return sec, err
		}
	}
	table := report.Table{
		Caption: "**broker latency 0s**",
		Header: []string{"call", "without p50", "without p99", "off p50", "off p99", "on p50", "on p99",
			"off / without (p50)", "on / without (p50)", "on / off (p50)", "unexpected answers"},
	}
	requests := 0
	for _, v := range brokerVerbs() {
		s.Logf("tracing: %s", v.name)
		arms := make([]loadgen.Arm, len(processes))
		for i, p := range processes {
			bodies, err := reviews(len(objects[i]), func(j int) ([]byte, error) { return v.review(objects[i][j]) })
			if err != nil {
				return sec, err
			}
			arm := objects[i]
			arms[i] = loadgen.Arm{Name: p.name, Work: loadgen.Work{
				Do:    rc.Reviews(p.url, func(j int) []byte { return bodies[j] }, loadgen.Expect{Allowed: true}),
				After: func(ctx context.Context, j int) error { return v.persist(ctx, s.Env.Client, arm[j]) },
			}}
		}
		// Alternate gives the warmup and each round (one request per arm)
		// MaxDuration/Rounds: a minute each, whatever n, so that no request
		// on a loaded machine is cut short (the review client gives up
		// after 35s) and leaves its instance without the status the next
		// step waits for.
		res, err := loadgen.Alternate(ctx, arms, loadgen.Plan{
			Load: loadgen.Load{Concurrency: 1, Requests: n, MaxDuration: time.Duration(n) * time.Minute}, Rounds: n, Warmup: w,
		})
		if err != nil {
			return sec, fmt.Errorf("tracing, %s: %w", v.name, err)
		}
		if err := s.verify("tracing, "+v.name, res...); err != nil {
			return sec, err
		}
		requests += w + n
		if err := s.Env.Settle(ctx, ns, s.Sizes.StepTimeout); err != nil {
			return sec, err
		}
		for i := range objects {
			if objects[i], err = s.reload(ctx, objects[i]); err != nil {
				return sec, err
			}
		}
		without, off, on := loadgen.Summarize(res[0]), loadgen.Summarize(res[1]), loadgen.Summarize(res[2])
		table.Rows = append(table.Rows, []string{v.name, dur(without.P50), dur(without.P99), dur(off.P50), dur(off.P99), dur(on.P50), dur(on.P99),
			ratio(off.P50, without.P50), ratio(on.P50, without.P50), ratio(on.P50, off.P50), problems(res...)})
		rOff, rOn := loadgen.Ratio(off.P50, without.P50), loadgen.Ratio(on.P50, without.P50)
		sec.Targets = append(sec.Targets,
			report.Check(v.name+" at 0s broker latency: tracing off against lockstep without it", "<= 1.02 (p50)",
				loadgen.FormatRatio(rOff), !math.IsNaN(rOff) && rOff <= 1.02 && clean(res...)),
			report.Check(v.name+" at 0s broker latency: tracing on against lockstep without it", "<= 1.10 (p50)",
				loadgen.FormatRatio(rOn), !math.IsNaN(rOn) && rOn <= 1.10 && clean(res...)))
	}
	sec.Tables = append(sec.Tables, table)
	// The traced process exports its last batch within the SDK's delay
	// (5s): wait for it, bounded, to count every span.
	spans := sink.Count()
	_ = env.Poll(ctx, 10*time.Second, 500*time.Millisecond, func(context.Context) (bool, error) {
		now := sink.Count()
		settled := now == spans && now > 0
		spans = now
		return settled, nil
	})
	sec.Notes = append(sec.Notes, fmt.Sprintf("The traced lockstep exported %d spans for its %d requests (%.1f a request: the admission, "+
		"its checks, the lock, the broker call and its OSB request, the record; the commits of its operations are the leading lockstep's, "+
		"untraced).", spans, requests, float64(spans)/float64(max(requests, 1))))
	return sec, nil
}

func stopReplica(s *Suite, r *env.Replica) {
	if err := r.Stop(); err != nil {
		s.Logf("stopping a lockstep replica: %v", err)
	}
}
