package suite

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/lockstep-dev/lockstep/bench/gobench"
	"github.com/lockstep-dev/lockstep/bench/report"
	"github.com/lockstep-dev/lockstep/test/framework"
)

// microPackages hold the Go benchmarks of the policy engine, of the
// parameter-schema checks and of the bounds on secret transforms.
var microPackages = []string{"./internal/validate", "./internal/validate/schema", "./internal/credentials"}

// Micro runs the Go benchmarks of the policy engine, the parameter schema
// checks and the bounds on secret transforms, with allocation counts.
func (s *Suite) Micro(ctx context.Context) (report.Section, error) {
	sec := report.Section{Title: "6. Micro-benchmarks: policy engine, parameter schemas, secret transforms", Text: []string{
		fmt.Sprintf("`go test -run '^$' -bench . -benchmem -benchtime %s -count %d %s`: the benchmarks that live beside the code. "+
			"The median of the %d runs is shown. `cpu-ns/op` is the process CPU time per operation (GC included), the figure that does not "+
			"grow when other processes compete for the CPU.", s.Sizes.Benchtime, s.Sizes.BenchCount, strings.Join(microPackages, " "), s.Sizes.BenchCount),
	}}
	s.Logf("micro: go test -bench %s", strings.Join(microPackages, " "))
	results, err := s.goBench(ctx, microPackages, ".")
	if err != nil {
		return sec, err
	}
	table := report.Table{Header: []string{"package", "benchmark", "ns/op", "cpu-ns/op", "B/op", "allocs/op"}}
	for _, r := range results {
		table.Rows = append(table.Rows, []string{
			strings.TrimPrefix(r.Package, "github.com/lockstep-dev/lockstep/"), strings.TrimPrefix(r.Name, "Benchmark"),
			metric(r, "ns/op"), metric(r, "cpu-ns/op"), metric(r, "B/op"), metric(r, "allocs/op"),
		})
	}
	sec.Tables = append(sec.Tables, table)

	if r, ok := find(results, "BenchmarkValidateUpdateUnchanged"); ok {
		allocs, _ := r.Metric("allocs/op")
		sec.Targets = append(sec.Targets, report.Check("policy engine, unchanged object", "0 allocs/op",
			fmt.Sprintf("%s allocs/op, %s B/op", metric(r, "allocs/op"), metric(r, "B/op")), allocs == 0))
	} else {
		sec.Targets = append(sec.Targets, report.Target{What: "policy engine, unchanged object", Want: "0 allocs/op",
			Got: "BenchmarkValidateUpdateUnchanged not found", Status: report.NotMeasured})
	}
	for _, name := range []string{"BenchmarkValidateProvision", "BenchmarkValidateUpdate"} {
		what := "schema check, typical parameters (" + strings.TrimPrefix(name, "Benchmark") + ")"
		r, ok := find(results, name)
		if !ok {
			sec.Targets = append(sec.Targets, report.Target{What: what, Want: "< 20 µs", Got: name + " not found", Status: report.NotMeasured})
			continue
		}
		// Judged on CPU time per check where the benchmark reports it: on
		// a shared machine wall time also counts what other processes
		// took from this one.
		ns, _ := r.Metric("ns/op")
		got, judged := fmt.Sprintf("%.1f µs/op", ns/1000), ns
		if cpu, ok := r.Metric("cpu-ns/op"); ok {
			got, judged = fmt.Sprintf("%.1f µs of CPU per op (%.1f µs wall)", cpu/1000, ns/1000), cpu
		}
		sec.Targets = append(sec.Targets, report.Check(what, "< 20 µs", got, judged < 20000))
	}
	// The most expensive secret transforms the bounds accept, judged on
	// CPU time: what one binding may cost the shared webhook.
	if r, ok := find(results, "BenchmarkTransformsAtTheirBounds"); ok {
		ns, _ := r.Metric("ns/op")
		cpu, _ := r.Metric("cpu-ns/op")
		sec.Targets = append(sec.Targets, report.Check("secret transforms at their bounds", "≤ 50 ms of CPU",
			fmt.Sprintf("%.1f ms of CPU per binding (%.1f ms wall)", cpu/1e6, ns/1e6), cpu <= 50e6))
	} else {
		sec.Targets = append(sec.Targets, report.Target{What: "secret transforms at their bounds", Want: "≤ 50 ms of CPU",
			Got: "BenchmarkTransformsAtTheirBounds not found", Status: report.NotMeasured})
	}
	if s.Sizes.Benchtime == "1x" {
		sec.Notes = append(sec.Notes, "-benchtime 1x: one iteration per benchmark, which proves the benchmarks run but measures nothing.")
	}
	return sec, nil
}

// goBench runs Go benchmarks and returns, per benchmark, the run with the
// median ns/op.
func (s *Suite) goBench(ctx context.Context, packages []string, pattern string) ([]gobench.Result, error) {
	gotool, err := framework.GoTool()
	if err != nil {
		return nil, err
	}
	all, _, err := gobench.Run(ctx, gobench.Options{
		GoTool: gotool, Dir: s.Root, Packages: packages, Pattern: pattern,
		Benchtime: s.Sizes.Benchtime, Count: s.Sizes.BenchCount, Flags: s.GoFlags,
	})
	if err != nil {
		return nil, err
	}
	return medians(all), nil
}

// medians keeps, for each benchmark, the run with the median ns/op, in the
// order benchmarks first appeared.
func medians(all []gobench.Result) []gobench.Result {
	var order []string
	runs := map[string][]gobench.Result{}
	for _, r := range all {
		key := r.Package + " " + r.Name
		if _, seen := runs[key]; !seen {
			order = append(order, key)
		}
		runs[key] = append(runs[key], r)
	}
	out := make([]gobench.Result, 0, len(order))
	for _, key := range order {
		rs := slices.Clone(runs[key])
		sort.SliceStable(rs, func(i, j int) bool { return rs[i].Metrics["ns/op"] < rs[j].Metrics["ns/op"] })
		out = append(out, rs[(len(rs)-1)/2])
	}
	return out
}

func find(results []gobench.Result, name string) (gobench.Result, bool) {
	for _, r := range results {
		if r.Name == name {
			return r, true
		}
	}
	return gobench.Result{}, false
}

// metric formats a benchmark metric, "-" when not reported.
func metric(r gobench.Result, unit string) string {
	v, ok := r.Metric(unit)
	if !ok {
		return "-"
	}
	switch {
	case v == float64(int64(v)):
		return fmt.Sprint(int64(v))
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}
