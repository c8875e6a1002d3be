package robustness

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/test/framework"
	"github.com/lockstep-dev/lockstep/test/robustness/check"
	"github.com/lockstep-dev/lockstep/test/robustness/faultproxy"
	"github.com/lockstep-dev/lockstep/test/robustness/history"
)

// Result is how a run went.
type Result struct {
	Options Options
	// Violations are the broken promises, each with the history around it.
	Violations []Violation
	Requests   []history.Request
	Faults     []history.Fault
	// Injected counts, by kind, the faults injected: each kill, each stop,
	// each request a proxy broke, each asynchronous operation made to fail.
	Injected map[history.FaultKind]int
	// LastFault is when the last fault ended; Converged how long lockstep
	// took from then to finish everything (negative when it did not
	// within Options.Converge).
	LastFault time.Time
	Converged time.Duration
	// Open are what kept lockstep from converging at the last check when
	// it did not.
	Open []check.Violation
	// Events counts the events seen, Scrapes the metrics scrapes: the
	// credential check read them.
	Events, Scrapes int
	// Stranded are objects left in namespaces that no longer exist, which
	// the checks leave out (see check.Snapshot).
	Stranded []string
}

// Violation is a broken promise, with what a person needs to look into
// it: the seed, the history around it, the object's records.
type Violation struct {
	check.Violation
	Seed    int64
	History []string
	Journal []string
}

// String is the violation as the results file and a failing test show it.
func (v Violation) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "VIOLATION of %q (seed %d): %s", v.Invariant, v.Seed, v.Object)
	if v.ExternalID != "" {
		fmt.Fprintf(&b, " (broker id %s)", v.ExternalID)
	}
	fmt.Fprintf(&b, "\n  %s\n", v.Message)
	if v.Request != nil {
		fmt.Fprintf(&b, "  the request: #%d as %s: %s %s (%s) -> %s: %s\n", v.Request.Seq, v.Request.User, v.Request.Kind, v.Request.Object, v.Request.Detail, v.Request.Answer, v.Request.Message)
	}
	if len(v.History) > 0 {
		b.WriteString("  history around it:\n")
		for _, l := range v.History {
			b.WriteString("    " + l + "\n")
		}
	}
	if len(v.Journal) > 0 {
		b.WriteString("  its journal:\n")
		for _, l := range v.Journal {
			b.WriteString("    " + l + "\n")
		}
	}
	fmt.Fprintf(&b, "  replay: make robustness SEED=%d\n", v.Seed)
	return b.String()
}

// Build compiles lockstep's webhook binary with the deliberate breaks
// (build tag lockstep_breaks) into dir, and returns its path.
func Build(ctx context.Context, dir string) (string, error) {
	root, err := framework.Root()
	if err != nil {
		return "", err
	}
	if err := framework.Build(ctx, root, dir, []string{"-tags", "lockstep_breaks"}, "./cmd/webhook"); err != nil {
		return "", err
	}
	return filepath.Join(dir, "webhook"), nil
}

// Run starts everything, sends traffic and injects faults for
// opts.Duration, waits for lockstep to converge, checks every promise,
// and writes the results file.
func Run(ctx context.Context, opts Options) (*Result, error) {
	if err := mkdir(opts.Dir); err != nil {
		return nil, err
	}
	binary := opts.Binary
	if binary == "" {
		var err error
		if binary, err = Build(ctx, opts.Dir); err != nil {
			return nil, err
		}
	}
	if opts.Profile.Async != nil {
		opts.Async = *opts.Profile.Async
	}
	e, err := start(ctx, opts, binary)
	if err != nil {
		return nil, err
	}
	defer e.stop()
	e.logf("seed %d: lockstep, kube-apiserver and the brokers are up; traffic and faults for %s", opts.Seed, opts.Duration)

	t := &traffic{env: e, hist: history.New(opts.Seed), gate: newGate()}
	if err := t.setup(ctx, opts.Namespaces); err != nil {
		return nil, err
	}
	scrapeCtx, stopScrapes := context.WithCancel(ctx)
	defer stopScrapes()
	go e.scrapeEvery(scrapeCtx, 5*time.Second)

	runCtx, stopRun := context.WithTimeout(ctx, opts.Duration)
	defer stopRun()
	inj := &injector{env: e, hist: t.hist, p: opts.Profile, gate: t.gate}
	injected := make(chan struct{})
	go func() { inj.run(runCtx); close(injected) }()
	t.run(runCtx, opts.Clients)
	<-injected
	e.heal()

	res := &Result{Options: opts, Requests: t.hist.Requests(), Faults: t.hist.Faults()}
	for _, f := range res.Faults {
		if f.End.After(res.LastFault) {
			res.LastFault = f.End
		}
	}
	if res.LastFault.IsZero() {
		res.LastFault = time.Now()
	}
	e.logf("traffic and faults stopped after %d requests and %d faults; waiting for lockstep to converge (at most %s)", len(res.Requests), len(res.Faults), opts.Converge)
	res.Converged, res.Open = e.converge(ctx, t, res.LastFault)

	snap, err := e.snapshot(ctx, t, true)
	if err != nil {
		return nil, err
	}
	res.Stranded = check.Stranded(snap)
	for _, v := range check.All(snap) {
		res.Violations = append(res.Violations, explain(v, t.hist, snap))
	}
	res.Injected = injectedCounts(res.Faults, e)
	_, res.Events = e.watch.texts()
	res.Scrapes = e.metrics.scraped()
	if opts.Results != "" {
		if err := writeResults(opts.Results, res); err != nil {
			return res, err
		}
	}
	e.logf("%d requests, %d faults, %d violations", len(res.Requests), len(res.Faults), len(res.Violations))
	return res, nil
}

// heal ends every fault: the brokers answer again and at once, and the
// replicas come back without a pause.
func (e *env) heal() {
	for _, b := range e.brokers {
		b.setAsync(0)
		if err := b.proxy.Resume(); err != nil {
			e.logf("resuming broker %s: %v", b.name, err)
		}
	}
	for _, r := range e.replicas {
		r.mu.Lock()
		r.resumeAt = time.Time{}
		r.mu.Unlock()
	}
}

// converge waits until the promises about the state hold (what the
// brokers hold, leaks, everything final) and returns how long after the
// last fault that was; negative when they did not hold within
// opts.Converge, with what did not hold at the last check.
func (e *env) converge(ctx context.Context, t *traffic, lastFault time.Time) (time.Duration, []check.Violation) {
	deadline := time.Now().Add(e.opts.Converge)
	var left []check.Violation
	for time.Now().Before(deadline) {
		if n := t.followWayOuts(ctx); n > 0 {
			e.logf("followed %d way(s) out that Terminating namespaces name", n)
		}
		snap, err := e.snapshot(ctx, t, false)
		if err == nil {
			left = nil
			for _, c := range []func(check.Snapshot) []check.Violation{check.BrokerState, check.Leaks, check.Final} {
				left = append(left, c(snap)...)
			}
			if len(left) == 0 {
				return time.Since(lastFault), nil
			}
			e.logf("not converged yet: %d open, e.g. %s: %s", len(left), left[0].Object, left[0].Message)
		}
		if !sleep(ctx, 3*time.Second) {
			break
		}
	}
	return -1, left
}

// explain adds to a violation the history around it and its object's
// records.
func explain(v check.Violation, h *history.History, s check.Snapshot) Violation {
	out := Violation{Violation: v, Seed: h.Seed}
	// The whole story of the object, or of what claimed its broker id.
	about := func(r history.Request) bool {
		return r.Object == v.Object || (v.ExternalID != "" && (r.ExternalID == v.ExternalID || r.InstanceID == v.ExternalID))
	}
	out.History = h.Around(about, time.Time{}, time.Time{}, 0)
	out.Journal = journalOf(v, s)
	return out
}

// journalOf lists the records of a violation's object, oldest first.
func journalOf(v check.Violation, s check.Snapshot) []string {
	var recs []v1alpha1.BrokerOperation
	for _, rec := range s.Seen {
		t := rec.Spec.Target
		name := fmt.Sprintf("%s %s/%s", t.Kind, targetNamespace(rec), t.Name)
		if name == v.Object || (v.ExternalID != "" && (t.ExternalID == v.ExternalID || t.InstanceID == v.ExternalID)) {
			recs = append(recs, rec)
		}
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].CreationTimestamp.Before(&recs[j].CreationTimestamp) })
	out := make([]string, len(recs))
	for i, rec := range recs {
		phase := rec.Status.Phase
		if phase == "" {
			phase = v1alpha1.PhasePending
		}
		out[i] = fmt.Sprintf("%s %s/%s: %s of %s %s by %s: %s (HTTP %d) %s", rec.CreationTimestamp.Format("15:04:05"), rec.Namespace, rec.Name,
			rec.Spec.Verb, rec.Spec.Target.Kind, rec.Spec.Target.Name, rec.Spec.Requester.Username, phase, rec.Status.HTTPStatus, rec.Status.Description)
	}
	return out
}

func targetNamespace(rec v1alpha1.BrokerOperation) string {
	if rec.Spec.Target.Namespace != "" {
		return rec.Spec.Target.Namespace
	}
	return rec.Namespace
}

// injectedCounts counts the faults injected by kind: kills and stops one
// each, request faults by the requests the proxies broke, failing
// asynchronous operations by the answers made to fail.
func injectedCounts(faults []history.Fault, e *env) map[history.FaultKind]int {
	out := map[history.FaultKind]int{}
	for _, f := range faults {
		if _, ok := proxyFaults[f.Kind]; !ok && f.Kind != AsyncFails {
			out[f.Kind]++
		}
	}
	for _, b := range e.brokers {
		for _, x := range b.proxy.Exchanges() {
			for kind, pk := range proxyFaults {
				if x.Fault.Kind == pk && (pk != faultproxy.DropAfter202 || x.BrokerStatus == http.StatusAccepted) {
					out[kind]++
				}
			}
		}
		b.mu.Lock()
		out[AsyncFails] += b.failed
		b.mu.Unlock()
	}
	return out
}
