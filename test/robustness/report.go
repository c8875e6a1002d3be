package robustness

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/test/robustness/check"
	"github.com/lockstep-dev/lockstep/test/robustness/history"
)

// answers are the classes of answers, in the order the results show them.
var answers = []history.Answer{history.Allowed, history.AllowedInProgress, history.Refused, history.Unknown, history.InProgress, history.Failed}

// writeResults writes the figures of a run to path (Markdown).
func writeResults(path string, res *Result) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(results(res)), 0o644)
}

// results renders the figures of a run.
func results(res *Result) string {
	o := res.Options
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("# Robustness run, seed %d\n\n", o.Seed)
	brk := "none"
	if o.Break != "" {
		brk = string(o.Break)
	}
	injected := 0
	for _, n := range res.Injected {
		injected += n
	}
	w("- %s of traffic and faults, %d clients over %d namespaces, fault profile %q, deliberate break: %s; %s, %d CPUs (%s/%s)\n",
		o.Duration, o.Clients, o.Namespaces, o.Profile.Name, brk, time.Now().UTC().Format("2006-01-02"), runtime.NumCPU(), runtime.GOOS, runtime.GOARCH)
	w("- **%d violations** over %d operations and %d faults injected\n", len(res.Violations), len(res.Requests), injected)
	if res.Converged >= 0 {
		w("- time from the last fault to convergence: %s (bound %s)\n", res.Converged.Round(100*time.Millisecond), o.Converge)
	} else {
		w("- lockstep did **not converge** within %s of the last fault; at the last check, %s\n", o.Converge, unconverged(res.Open))
	}
	w("- targets of a 10-minute run: %s\n", targetsLine(res))
	w("- the credential check read %d events, %d metrics scrapes, every log, record and status\n", res.Events, res.Scrapes)
	if len(res.Stranded) > 0 {
		w("- %d object(s) were left in namespaces that no longer exist (kube-controller-manager finalized their namespaces without deleting them); nobody can change them, so the checks of what lockstep must finish leave them out: %s\n",
			len(res.Stranded), firstOf(res.Stranded, 10))
	}
	w("- replay: `make robustness SEED=%d DURATION=%s`\n\n", o.Seed, o.Duration)

	w("## Operations by kind and answer\n\n| kind |")
	for _, a := range answers {
		w(" %s |", a)
	}
	w(" total |\n|---|")
	for range answers {
		w("---:|")
	}
	w("---:|\n")
	count := map[history.Kind]map[history.Answer]int{}
	for _, r := range res.Requests {
		if count[r.Kind] == nil {
			count[r.Kind] = map[history.Answer]int{}
		}
		count[r.Kind][r.Answer]++
	}
	totals := map[history.Answer]int{}
	for _, k := range history.Kinds {
		w("| %s |", k)
		sum := 0
		for _, a := range answers {
			w(" %d |", count[k][a])
			sum += count[k][a]
			totals[a] += count[k][a]
		}
		w(" %d |\n", sum)
	}
	w("| **all** |")
	for _, a := range answers {
		w(" %d |", totals[a])
	}
	w(" %d |\n\n", len(res.Requests))

	w("## Faults by kind\n\nA window is one stretch of a fault; injected counts each kill and stop, each request a proxy broke, each asynchronous operation made to fail.\n\n| kind | windows | injected | held back from |\n|---|---:|---:|---|\n")
	windows := map[history.FaultKind]int{}
	for _, f := range res.Faults {
		windows[f.Kind]++
	}
	for _, k := range AllFaults {
		held := "—"
		if !o.Profile.injects(k) {
			held = "**not injected in this profile**"
		} else if s, ok := o.Profile.Spare[k]; ok {
			held = strings.Join(s.Ops, ", ") + ": " + s.Why
		}
		w("| %s | %d | %d | %s |\n", k, windows[k], res.Injected[k], held)
	}

	w("\n## Violations by invariant\n\n| invariant | violations |\n|---|---:|\n")
	byInvariant := map[check.Invariant]int{}
	for _, v := range res.Violations {
		byInvariant[v.Invariant]++
	}
	for _, inv := range check.Invariants {
		w("| %s | %d |\n", inv, byInvariant[inv])
	}

	w("\n## Latency of requests\n\nFrom the client's request to its answer; \"during faults\" are the requests that overlap a fault.\n\n| | requests | p50 | p99 |\n|---|---:|---:|---:|\n")
	during, without := latencies(res)
	for _, row := range []struct {
		name string
		d    []time.Duration
	}{{"during faults", during}, {"without faults", without}} {
		w("| %s | %d | %s | %s |\n", row.name, len(row.d), percentile(row.d, 50), percentile(row.d, 99))
	}

	w("\n## Findings\n\nDefects the suite found, each with the seed that found it. A fixed one names the tests that fail without its fix; " +
		"the short run of `make test` holds back the faults that show one not fixed yet (see the table of faults).\n\n")
	for _, f := range findings {
		state := "**not fixed yet**"
		if f.Fixed != "" {
			state = "fixed: " + f.Fixed
		}
		w("- **%s** (%s; seed %d): %s %s\n", f.Title, f.Invariant, f.Seed, f.Detail, state)
	}
	if known := len(knownFindings()); known > 0 {
		w("\n%d of %d not fixed yet.\n", known, len(findings))
	} else {
		w("\nAll %d fixed.\n", len(findings))
	}
	w("\n## Violations\n\n")
	if len(res.Violations) == 0 {
		w("None.\n")
	}
	for _, v := range res.Violations {
		w("```text\n%s```\n\n", v.String())
	}
	return b.String()
}

// The targets of a 10-minute run of the full profile.
const (
	targetOperations = 2000
	targetInjected   = 100
)

// targetsLine says whether a run met the targets: no violation, lockstep
// converged, at least targetOperations operations and targetInjected
// faults injected of every kind.
func targetsLine(res *Result) string {
	var missed []string
	if len(res.Violations) > 0 {
		missed = append(missed, fmt.Sprintf("%d violations (target 0)", len(res.Violations)))
	}
	if res.Converged < 0 {
		missed = append(missed, "did not converge")
	}
	if len(res.Requests) < targetOperations {
		missed = append(missed, fmt.Sprintf("%d operations (target %d)", len(res.Requests), targetOperations))
	}
	var few []string
	for _, k := range AllFaults {
		if res.Injected[k] < targetInjected {
			few = append(few, fmt.Sprintf("%s %d", k, res.Injected[k]))
		}
	}
	if len(few) > 0 {
		missed = append(missed, fmt.Sprintf("fewer than %d injected of %s", targetInjected, strings.Join(few, ", ")))
	}
	met := fmt.Sprintf("0 violations, converged, at least %d operations (%d), at least %d injected of every kind of fault", targetOperations, len(res.Requests), targetInjected)
	if len(missed) == 0 {
		return "**met**: " + met
	}
	return "**missed**: " + strings.Join(missed, "; ") + " (the targets: " + met + ")"
}

// unconverged says what kept lockstep from converging: by invariant, how
// many objects and which.
func unconverged(open []check.Violation) string {
	if len(open) == 0 {
		return "nothing was open (the checks could not read the cluster)"
	}
	objects := map[check.Invariant][]string{}
	for _, v := range open {
		objects[v.Invariant] = append(objects[v.Invariant], v.Object)
	}
	var parts []string
	for _, inv := range check.Invariants {
		if names := objects[inv]; len(names) > 0 {
			parts = append(parts, fmt.Sprintf("%q did not hold for %d: %s", inv, len(names), firstOf(names, 5)))
		}
	}
	return strings.Join(parts, "; ")
}

// latencies splits the requests' durations by whether a fault was on.
func latencies(res *Result) (during, without []time.Duration) {
	for _, r := range res.Requests {
		d := r.End.Sub(r.Start)
		faulty := false
		for _, f := range res.Faults {
			end := f.End
			if end.IsZero() {
				end = r.End
			}
			if f.Start.Before(r.End) && end.After(r.Start) {
				faulty = true
				break
			}
		}
		if faulty {
			during = append(during, d)
		} else {
			without = append(without, d)
		}
	}
	return during, without
}

// percentile returns the p-th percentile (nearest rank); "—" for none.
func percentile(d []time.Duration, p int) string {
	if len(d) == 0 {
		return "—"
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := (p*len(s) + 99) / 100
	return s[max(i-1, 0)].Round(time.Millisecond).String()
}

// firstOf joins the first n names, and says how many more there are.
func firstOf(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}
