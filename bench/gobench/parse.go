package gobench

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Result is one benchmark line.
type Result struct {
	// Package is the import path the benchmark belongs to.
	Package string
	// Name is the benchmark's name without the -GOMAXPROCS suffix.
	Name string
	// Iterations is b.N.
	Iterations int64
	// Metrics are the measured values by unit: ns/op, B/op, allocs/op
	// and any custom ones (provisions/s, cpu-ns/op).
	Metrics map[string]float64
}

// Metric returns a metric and whether it was reported.
func (r Result) Metric(unit string) (float64, bool) {
	v, ok := r.Metrics[unit]
	return v, ok
}

// Parse reads `go test -bench` output. With -count above 1 a benchmark
// appears several times; every line is returned.
func Parse(r io.Reader) ([]Result, error) {
	var (
		out []Result
		pkg string
	)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if p, ok := strings.CutPrefix(line, "pkg: "); ok {
			pkg = strings.TrimSpace(p)
			continue
		}
		if !strings.HasPrefix(line, "Benchmark") {
			continue
		}
		res, ok, err := parseLine(line)
		if err != nil {
			return nil, err
		}
		if ok {
			res.Package = pkg
			out = append(out, res)
		}
	}
	return out, sc.Err()
}

// parseLine reads `BenchmarkName-2  1000  123 ns/op  0 B/op ...`; ok is
// false for lines that are not results (a benchmark's log output).
func parseLine(line string) (Result, bool, error) {
	f := strings.Fields(line)
	if len(f) < 4 || len(f)%2 != 0 {
		return Result{}, false, nil
	}
	n, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return Result{}, false, nil
	}
	res := Result{Name: trimProcs(f[0]), Iterations: n, Metrics: map[string]float64{}}
	for i := 2; i+1 < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return Result{}, false, fmt.Errorf("benchmark line %q: value %q: %w", line, f[i], err)
		}
		res.Metrics[f[i+1]] = v
	}
	return res, true, nil
}

// trimProcs drops the -GOMAXPROCS suffix go test adds to names.
func trimProcs(name string) string {
	i := strings.LastIndexByte(name, '-')
	if i < 0 {
		return name
	}
	if _, err := strconv.Atoi(name[i+1:]); err != nil {
		return name
	}
	return name[:i]
}
