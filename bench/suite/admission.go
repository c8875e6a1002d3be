package suite

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/bench/env"
	"github.com/lockstep-dev/lockstep/bench/loadgen"
	"github.com/lockstep-dev/lockstep/bench/report"
	"github.com/lockstep-dev/lockstep/internal/admission"
	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/test/framework"
)

// admissionScenario is one kind of request of the admission benchmark.
type admissionScenario struct {
	name string
	// brokerCall is true when lockstep is expected to call the broker.
	brokerCall bool
	// requests is how many requests each arm gets at a concurrency level.
	requests func(level int) int
	// body returns request i's AdmissionReview at a concurrency level.
	body func(level, i int) []byte
	// want is lockstep's expected answer (the baseline allows all).
	want loadgen.Expect
}

// Admission measures lockstep's webhook server against the allow-all
// baseline with the same TLS setup, at fixed concurrency levels, for a
// metadata-only update, a create-only violation and a spec update with an
// instant broker.
func (s *Suite) Admission(ctx context.Context) (report.Section, error) {
	sec := report.Section{Title: "1. Admission overhead", Text: []string{
		"Real AdmissionReviews (v1, JSON, objects with managedFields and status, the size the API server sends) are posted over TLS " +
			"(HTTP/2 where the server offers it, certificate verified, as kube-apiserver does) to lockstep's validating webhook for ServiceInstances, served by the real " +
			"`cmd/webhook` binary in its own process, and to the baseline: `bench/cmd/allow-all`, a controller-runtime webhook server with the " +
			"same TLS setup (same `webhook.NewServer` options and certificates) whose handler allows everything. " +
			fmt.Sprintf("Per scenario and concurrency level each server gets %s measured requests (%d for the spec update) after a warmup, "+
				"in alternating rounds whose order rotates: as many rounds as leave every worker at least %d requests a round, between %d "+
				"and %d, so that a burst of noise from the rest of the machine falls on every server alike (at concurrency 1, %d rounds).",
				requestCounts(s.Sizes), s.Sizes.AdmissionBrokerRequests, requestsPerWorkerRound, s.Sizes.Rounds, maxAdmissionRounds,
				admissionRounds(admissionRequests(s.Sizes, 1), 1, s.Sizes.Rounds)),
		"For the requests that do not reach the broker, two reference servers (the same command, each in its own process, not " +
			"lockstep) show what reading the objects costs behind controller-runtime's `admission.Webhook`, which decodes the " +
			"AdmissionReview twice and copies both objects: one decodes the old and new ServiceInstance as `admission.WithValidator` does " +
			"(the universal deserializer) and allows without any check; the other compares the raw specs of an UPDATE first and decodes into " +
			"the Go type directly (`sigs.k8s.io/json`) only when they differ. lockstep serves its validators inside the same `admission.Webhook`, " +
			"with a handler that reads the raw objects: it compares the raw specs of an UPDATE first and decodes only the metadata " +
			"(without managedFields) and the spec, and only when they differ.",
		"The spec update goes through lockstep's whole broker phase: the per-object lock and the BrokerOperation journal (written to the " +
			"real kube-apiserver, whose status writes come back through lockstep's status guard), then the broker (instant test broker). " +
			"Each request names its own object, so that no request waits for another's lock; between levels the benchmark waits until " +
			"lockstep's reconciler has committed every operation and released every lock.",
	}}
	b, err := s.acmeBroker(ctx)
	if err != nil {
		return sec, err
	}
	const ns = "bench-admission"
	if err := s.Env.Namespace(ctx, ns, false); err != nil {
		return sec, err
	}
	defer s.cleanOperations(ns)

	scenarios, err := admissionScenarios(ns, s.Sizes, b)
	if err != nil {
		return sec, err
	}
	rc, err := loadgen.NewReviewClient(s.Env.CA, 35*time.Second)
	if err != nil {
		return sec, err
	}
	defer rc.Close()
	const path = admission.ValidateInstancePath

	for _, sc := range scenarios {
		modes := []string{env.Allow}
		if !sc.brokerCall {
			modes = env.BaselineModes
		}
		table := report.Table{
			Caption: "**" + sc.name + "**",
			Header: []string{"concurrency", "server", "p50", "p99", "throughput", "server CPU per request",
				"p50 vs allow-all", "p99 vs allow-all", "CPU vs allow-all", "broker calls per request", "unexpected answers"},
		}
		var (
			ratios []string
			worst  float64
			calls  int
			ok     = true
			// cpuRatios are each arm's CPU per request over
			// allow-all's, averaged over the levels.
			cpuRatios = map[string]float64{}
		)
		for _, level := range s.Sizes.Concurrency {
			requests := sc.requests(level)
			body := func(i int) []byte { return sc.body(level, i) }
			arms := []loadgen.Arm{{Name: "lockstep", Work: loadgen.Work{Do: rc.Reviews(s.Env.LockstepURL(path), body, sc.want)}}}
			procs := []*framework.Process{s.Env.Lockstep}
			for _, mode := range modes {
				arms = append(arms, loadgen.Arm{Name: mode, Work: loadgen.Work{
					Do: rc.Reviews(s.Env.BaselineURL(mode, path), body, loadgen.Expect{Allowed: true})}})
				procs = append(procs, s.Env.Baselines[mode])
			}
			s.Logf("admission: %s at concurrency %d", sc.name, level)
			before := b.Count()
			cpu0, err := processCPU(procs)
			if err != nil {
				return sec, err
			}
			res, err := loadgen.Alternate(ctx, arms, loadgen.Plan{
				Load:   loadgen.Load{Concurrency: level, Requests: requests, MaxDuration: s.Sizes.StepTimeout},
				Rounds: admissionRounds(requests, level, s.Sizes.Rounds), Warmup: s.Sizes.Warmup,
			})
			if err != nil {
				return sec, fmt.Errorf("admission, %s at concurrency %d: %w", sc.name, level, err)
			}
			if err := s.verify(fmt.Sprintf("admission, %s at concurrency %d", sc.name, level), res...); err != nil {
				return sec, err
			}
			brokerCalls := b.Count() - before
			b.ResetCalls()
			cpu1, err := processCPU(procs)
			if err != nil {
				return sec, err
			}
			calls += brokerCalls
			sums := make([]loadgen.Summary, len(res))
			cpus := make([]time.Duration, len(res))
			for k, r := range res {
				sums[k] = loadgen.Summarize(r)
				cpus[k] = (cpu1[k] - cpu0[k]) / time.Duration(max(s.Sizes.Warmup+r.Completed()+r.Errors, 1))
			}
			base := sums[1]
			for k, a := range arms {
				cpuRatios[a.Name] += loadgen.Ratio(cpus[k], cpus[1]) / float64(len(s.Sizes.Concurrency))
				name, brokerCell := a.Name, "-"
				if k == 0 {
					sent := s.Sizes.Warmup + res[0].Completed() + res[0].Errors
					brokerCell = fmt.Sprintf("%.2f", float64(brokerCalls)/float64(max(sent, 1)))
				} else {
					name = baselineNames[a.Name]
				}
				table.Rows = append(table.Rows, []string{fmt.Sprint(level), name, dur(sums[k].P50), dur(sums[k].P99),
					rate(sums[k].Throughput), dur(cpus[k]), ratio(sums[k].P50, base.P50), ratio(sums[k].P99, base.P99),
					ratio(cpus[k], cpus[1]), brokerCell, problems(res[k])})
			}
			r99 := loadgen.Ratio(sums[0].P99, base.P99)
			worst = math.Max(worst, r99)
			ratios = append(ratios, fmt.Sprintf("%s at %d", loadgen.FormatRatio(r99), level))
			ok = ok && clean(res[0], res[1])
			if sc.brokerCall {
				if err := s.Env.Settle(ctx, ns, s.Sizes.StepTimeout); err != nil {
					return sec, err
				}
			}
		}
		sec.Tables = append(sec.Tables, table)
		if note := decodeNote(sc.name, cpuRatios); !sc.brokerCall && note != "" {
			sec.Notes = append(sec.Notes, note)
		}
		if !sc.brokerCall {
			sec.Targets = append(sec.Targets,
				report.Check(sc.name+": p99 vs allow-all", "<= 1.3x at every level", strings.Join(ratios, ", "), worst <= 1.3 && ok),
				report.Check(sc.name+": broker calls", "0", fmt.Sprint(calls), calls == 0))
		}
	}
	sec.Notes = append(sec.Notes,
		"Ratios are against allow-all, measured in the same run; the targets compare lockstep with allow-all.",
		"A metadata-only update is allowed by request class before any check; the create-only violation runs every static check "+
			"(field policies, spec checks, the ServiceBroker from lockstep's informer cache, the catalog and the plan's schemas) and is answered with one 422.",
		"Both servers and the load generator share the machine's cores with kube-apiserver and etcd; at concurrency 64 the figures include queueing for the CPU.",
		"Server CPU per request is each process's user and system time (/proc) over the scenario, warmup included, divided by the requests it "+
			"served: it does not depend on what else the machine was doing, so it is the steadiest figure here. lockstep's includes its "+
			"background work (informers, reconcilers: for the spec update, the commits of the operations and the status-guard calls their writes cause).")
	return sec, nil
}

// decodeNote reads a scenario's CPU ratios (each arm's CPU per request
// over allow-all's, averaged over the levels): what lockstep used against
// what reading the objects alone costs behind admission.Webhook.
func decodeNote(scenario string, cpu map[string]float64) string {
	l, typed, first := cpu["lockstep"], cpu[env.Typed], cpu[env.SpecFirst]
	if math.IsNaN(l) || math.IsNaN(typed) || math.IsNaN(first) {
		return ""
	}
	return fmt.Sprintf("Reading the %s figures: lockstep used %.2fx allow-all's CPU per request (mean over the levels), checks and "+
		"answer included. Only reading the objects behind controller-runtime's `admission.Webhook`, without any check, used %.2fx "+
		"(universal deserializer) and %.2fx (raw specs first, direct decoding): lockstep's handler reads the objects behind the same `admission.Webhook`.",
		scenario, l, typed, first)
}

// baselineNames name the allow-all modes in tables.
var baselineNames = map[string]string{
	env.Allow:     "allow-all (baseline)",
	env.Typed:     "reference: admission.Webhook + WithValidator decoding, no checks",
	env.SpecFirst: "reference: admission.Webhook + raw spec first, direct decode, no checks",
}

// processCPU reads the CPU time each process used so far.
func processCPU(procs []*framework.Process) ([]time.Duration, error) {
	out := make([]time.Duration, len(procs))
	for i, p := range procs {
		var err error
		if out[i], err = p.CPU(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// admissionScenarios builds the three kinds of request; spec updates act
// on an instance the broker holds.
func admissionScenarios(ns string, sz Sizes, b *fakebroker.Broker) ([]admissionScenario, error) {
	old := instance(ns, "orders-db", acme, fakebroker.ServiceDB, fakebroker.PlanSmall, `{"storageGB":10}`)
	relabelled := old.DeepCopy()
	relabelled.Labels["team"] = "payments"
	relabelled.ResourceVersion = ""
	metadataOnly, err := review(admissionv1.Update, old, relabelled, false)
	if err != nil {
		return nil, err
	}
	changedID := old.DeepCopy()
	changedID.Spec.ExternalID = "4f9c0a6e-0000-4000-8000-000000000001"
	createOnly, err := review(admissionv1.Update, old, changedID, false)
	if err != nil {
		return nil, err
	}

	// Spec updates: one object per request (and per level), each backed
	// by a broker instance of its own, as one broker id is held by one
	// object (their locks are keyed on it).
	perLevel := sz.Warmup + sz.AdmissionBrokerRequests
	updates := map[int][][]byte{}
	for _, level := range sz.Concurrency {
		bodies, err := reviews(perLevel, func(i int) ([]byte, error) {
			from := instance(ns, fmt.Sprintf("upd-c%d-%d", level, i), acme, fakebroker.ServiceDB, fakebroker.PlanSmall, `{"storageGB":10}`)
			b.PutInstance(fakebroker.Instance{ID: from.Spec.ExternalID, ServiceID: fakebroker.ServiceDBID, PlanID: fakebroker.PlanSmallID,
				Parameters: map[string]any{"storageGB": 10}})
			to := from.DeepCopy()
			to.Spec.Parameters.Raw = []byte(fmt.Sprintf(`{"storageGB":%d}`, 20+i%100))
			to.Generation = 2
			return review(admissionv1.Update, from, to, false)
		})
		if err != nil {
			return nil, err
		}
		updates[level] = bodies
	}
	fixed := func(body []byte) func(int, int) []byte { return func(int, int) []byte { return body } }
	nonBroker := func(level int) int { return admissionRequests(sz, level) }
	return []admissionScenario{
		{name: "metadata-only update", requests: nonBroker, body: fixed(metadataOnly), want: loadgen.Expect{Allowed: true}},
		{name: "create-only violation (rejected)", requests: nonBroker, body: fixed(createOnly),
			want: loadgen.Expect{Allowed: false, Code: http.StatusUnprocessableEntity}},
		{name: "spec update, instant broker", brokerCall: true, requests: func(int) int { return sz.AdmissionBrokerRequests },
			body: func(level, i int) []byte { return updates[level][i%len(updates[level])] }, want: loadgen.Expect{Allowed: true}},
	}, nil
}

// cleanOperations deletes the BrokerOperations a benchmark left in ns, so
// that later benchmarks (memory in particular) do not carry them.
func (s *Suite) cleanOperations(ns string) {
	ctx, cancel := context.WithTimeout(context.Background(), s.Sizes.StepTimeout)
	defer cancel()
	if err := s.Env.Client.DeleteAllOf(ctx, &v1alpha1.BrokerOperation{}, client.InNamespace(ns)); err != nil {
		s.Logf("could not delete the BrokerOperations in %s: %v", ns, err)
	}
}

// Alternation of the admission benchmark: the finer the rounds, the more
// evenly bursts of noise fall on lockstep and its baselines; each round
// still gives every worker enough requests to run at its concurrency.
const (
	requestsPerWorkerRound = 10
	maxAdmissionRounds     = 30
)

// admissionRequests is how many requests each arm gets at a concurrency
// level on the paths without a broker call: sz.AdmissionRequests, or more
// where that is needed for sz.AdmissionRounds rounds. At concurrency 64,
// 6,000 requests made only 9 rounds of 0.2 s each, and one burst of noise
// from the rest of the machine could cover a whole round of one arm and
// decide its p99 (lockstep's p50 was 1.44x allow-all's in one run at
// 1.09x its CPU per request).
func admissionRequests(sz Sizes, concurrency int) int {
	return max(sz.AdmissionRequests, sz.AdmissionRounds*requestsPerWorkerRound*concurrency)
}

// requestCounts describes the requests per arm at each concurrency level
// for the section's text: "6000" when all levels get the same, else
// "6000 at concurrency 1, 6000 at 8 and 19200 at 64".
func requestCounts(sz Sizes) string {
	if len(sz.Concurrency) == 0 {
		return fmt.Sprint(sz.AdmissionRequests)
	}
	counts := make([]int, len(sz.Concurrency))
	for i, level := range sz.Concurrency {
		counts[i] = admissionRequests(sz, level)
	}
	if slices.Min(counts) == slices.Max(counts) {
		return fmt.Sprint(counts[0])
	}
	parts := make([]string, len(counts))
	for i, n := range counts {
		parts[i] = fmt.Sprintf("%d at %d", n, sz.Concurrency[i])
	}
	parts[0] = fmt.Sprintf("%d at concurrency %d", counts[0], sz.Concurrency[0])
	last := len(parts) - 1
	return strings.Join(parts[:last], ", ") + " and " + parts[last]
}

// admissionRounds is how many alternating rounds requests at a concurrency
// level are split into: at least min, at most maxAdmissionRounds.
func admissionRounds(requests, concurrency, least int) int {
	return max(least, min(maxAdmissionRounds, requests/(requestsPerWorkerRound*concurrency)))
}
