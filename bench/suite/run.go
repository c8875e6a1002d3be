package suite

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/bench/report"
)

// Select returns the benchmarks named in only (all when only is empty).
func Select(only []string) ([]Benchmark, error) {
	all := Benchmarks()
	if len(only) == 0 {
		return all, nil
	}
	var names []string
	for _, b := range all {
		names = append(names, b.Name)
	}
	var out []Benchmark
	for _, b := range all {
		if slices.Contains(only, b.Name) {
			out = append(out, b)
		}
	}
	for _, name := range only {
		if !slices.Contains(names, name) {
			return nil, fmt.Errorf("no benchmark named %q; the benchmarks are %s", name, strings.Join(names, ", "))
		}
	}
	return out, nil
}

// Run runs benchmarks in order. A benchmark that fails is reported in its
// section (the others still run) and its error returned.
func (s *Suite) Run(ctx context.Context, benchmarks []Benchmark) ([]report.Section, []error) {
	var (
		sections []report.Section
		errs     []error
	)
	for _, b := range benchmarks {
		if b.NeedsEnv && s.Env == nil {
			errs = append(errs, fmt.Errorf("benchmark %s needs the control plane, which was not started", b.Name))
			continue
		}
		start := time.Now()
		s.Logf("%s: start", b.Name)
		sec, err := b.Run(s, ctx)
		if err != nil {
			err = fmt.Errorf("benchmark %s: %w", b.Name, err)
			sec.Notes = append(sec.Notes, "**FAILED**: "+err.Error())
			errs = append(errs, err)
		}
		sec.Notes = append(sec.Notes, fmt.Sprintf("Took %s.", time.Since(start).Round(time.Second)))
		sections = append(sections, sec)
		s.Logf("%s: done in %s", b.Name, time.Since(start).Round(time.Millisecond))
	}
	return sections, errs
}

// Preface is the results file's opening: how the figures were obtained and
// how to read them.
func Preface() []string {
	return []string{
		"Written by `make bench` (`hack/bench.sh`); do not edit by hand. docs/development.md (Benchmarks) lists the benchmarks and their targets. " +
			"Profiles of the targets missed, and the changes they point to, are in `bench/FINDINGS.md` (written by hand, dated).",
		"**Read the ratios, not the absolute figures.** The machine is shared and noisy, and lockstep, its baselines, the load generator, " +
			"kube-apiserver and etcd all run on it at once. That is why every benchmark measures lockstep and its baseline in the same run, " +
			"alternating in rounds whose order rotates, so that both see the same noise: the ratio between them is the figure that carries " +
			"over from one run (and one machine) to another; absolute latencies are only what this machine did at that moment.",
		"Everything runs on loopback; every load loop is bounded in count and in time. Latencies are client-side wall time of requests " +
			"that got the expected answer (a rejection is the expected answer where a rule refuses the request), p50 and p99 by nearest rank.",
	}
}
