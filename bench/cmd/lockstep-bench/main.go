// Command lockstep-bench runs lockstep's benchmark suite and
// writes the results as markdown.
//
//	lockstep-bench -out bench/RESULTS.md            # everything, full sizes
//	lockstep-bench -only admission,scale -sizes tiny
//	lockstep-bench -only e2e,broker,journal -before v0.1.0   # side by side with an earlier commit
//
// The benchmarks that need a control plane (admission, e2e, broker,
// journal, burst, scale) take kube-apiserver, etcd and kubectl from -assets, by default
// $KUBEBUILDER_ASSETS (hack/testbin.sh prints the directory). `make bench`
// runs it through hack/bench.sh.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/lockstep-dev/lockstep/bench/env"
	"github.com/lockstep-dev/lockstep/bench/report"
	"github.com/lockstep-dev/lockstep/bench/suite"
)

func main() {
	// The control plane's start-up (envtest) logs through controller-runtime;
	// the benchmark reports its own progress, and lockstep's log is in the
	// working directory.
	ctrllog.SetLogger(logr.Discard())
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "lockstep-bench:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	flags := flag.NewFlagSet("lockstep-bench", flag.ContinueOnError)
	out := flags.String("out", "", "write the results (markdown) to this file; empty: stdout")
	sizes := flags.String("sizes", "full", "full (make bench) or tiny (a quick check that everything runs)")
	only := flags.String("only", "", "comma-separated benchmarks to run (micro, admission, e2e, typed, broker, tracing, journal, burst, scale, embedded); empty: all")
	assets := flags.String("assets", os.Getenv("KUBEBUILDER_ASSETS"), "directory with kube-apiserver, etcd and kubectl")
	root := flags.String("root", "", "repository root; empty: found from the working directory")
	timeout := flags.Duration("timeout", 40*time.Minute, "stop everything after this long")
	keep := flags.Bool("keep", false, "keep the working directory (binaries, lockstep-N.log of each lockstep started) for inspection")
	before := flags.String("before", "", "a commit to compare with: its lockstep runs the admission, e2e, broker, journal and burst benchmarks first, "+
		"and the results end with their targets side by side")
	var settings []string
	flags.Func("set", "a LOCKSTEP_*=value setting for every lockstep the benchmarks start, repeatable "+
		"(-set LOCKSTEP_PPROF_ADDR=127.0.0.1:6060 serves Go's profiles while they run)", func(v string) error {
		if !strings.HasPrefix(v, "LOCKSTEP_") || !strings.Contains(v, "=") {
			return fmt.Errorf("%q: want LOCKSTEP_NAME=value", v)
		}
		settings = append(settings, v)
		return nil
	})
	if err := flags.Parse(args); err != nil {
		return err
	}

	var sz suite.Sizes
	switch *sizes {
	case "full":
		sz = suite.Full()
	case "tiny":
		sz = suite.Tiny()
	default:
		return fmt.Errorf("-sizes %q: must be full or tiny", *sizes)
	}
	var names []string
	if *only != "" {
		names = strings.Split(*only, ",")
	}
	benchmarks, err := suite.Select(names)
	if err != nil {
		return err
	}
	if *root == "" {
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		if *root, err = moduleRoot(wd); err != nil {
			return err
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()

	var beforeSections []report.Section
	var beforeName string
	if *before != "" {
		if *assets == "" {
			return errors.New("-before needs the control plane binaries: set KUBEBUILDER_ASSETS or -assets")
		}
		if beforeName, beforeSections, err = runBefore(ctx, *root, *before, *assets, sz, benchmarks, *keep); err != nil {
			return err
		}
	}

	rep := report.Report{Title: "lockstep benchmark results", Started: time.Now(), Preface: suite.Preface(),
		Command: "make bench", Machine: report.DetectMachine(ctx, *root, *assets)}
	s := &suite.Suite{Root: *root, Sizes: sz, Progress: os.Stderr}
	defer s.Close()
	if needsEnv(benchmarks) {
		if *assets == "" {
			return errors.New("no control plane binaries for " + strings.Join(envNames(benchmarks), ", ") +
				": set KUBEBUILDER_ASSETS or -assets (`bash hack/testbin.sh` prints the directory)")
		}
		e, err := env.Start(ctx, env.Options{Root: *root, Assets: *assets, Progress: os.Stderr, Keep: *keep, Settings: settings})
		if err != nil {
			return err
		}
		defer func() {
			if err := e.Stop(); err != nil {
				fmt.Fprintln(os.Stderr, "lockstep-bench:", err)
			}
			if *keep {
				fmt.Fprintln(os.Stderr, "lockstep-bench: working directory kept in", e.Dir)
			}
		}()
		s.Env = e
	}
	sections, errs := s.Run(ctx, benchmarks)
	if *before != "" {
		sections = append(sections, report.Compare(fmt.Sprintf("9. Before and after: %s and this tree", beforeName), beforeName, beforeSections, sections))
	}
	rep.Sections, rep.Finished = sections, time.Now()
	if *out == "" {
		_, err = os.Stdout.Write(rep.Markdown())
	} else {
		err = os.WriteFile(*out, rep.Markdown(), 0o644)
		if err == nil {
			fmt.Fprintln(os.Stderr, "lockstep-bench: results written to", *out)
		}
	}
	if err != nil {
		return fmt.Errorf("writing the results: %w", err)
	}
	return errors.Join(errs...)
}

// compared are the benchmarks -before runs against the earlier commit.
var compared = []string{"admission", "e2e", "broker", "journal", "burst"}

// runBefore runs the compared benchmarks among those selected against
// lockstep built from the commit ref, in a control plane of its own that
// is stopped before this tree's run starts.
func runBefore(ctx context.Context, root, ref, assets string, sz suite.Sizes, selected []suite.Benchmark, keep bool) (string, []report.Section, error) {
	var benchmarks []suite.Benchmark
	for _, b := range selected {
		if slices.Contains(compared, b.Name) {
			benchmarks = append(benchmarks, b)
		}
	}
	if len(benchmarks) == 0 {
		return "", nil, fmt.Errorf("-before compares the %s benchmarks, and none of them is selected", strings.Join(compared, ", "))
	}
	tree, commit, err := env.Checkout(ctx, root, ref, "")
	if err != nil {
		return "", nil, err
	}
	if !keep {
		defer os.RemoveAll(tree)
	}
	fmt.Fprintf(os.Stderr, "lockstep-bench: first %s against lockstep at %s (%s)\n", strings.Join(envNames(benchmarks), ", "), commit, tree)
	e, err := env.Start(ctx, env.Options{Root: tree, Assets: assets, Progress: os.Stderr, Keep: keep})
	if err != nil {
		return "", nil, fmt.Errorf("starting lockstep at %s: %w", commit, err)
	}
	s := &suite.Suite{Root: tree, Sizes: sz, Progress: os.Stderr, Env: e}
	sections, errs := s.Run(ctx, benchmarks)
	s.Close()
	if err := e.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "lockstep-bench:", err)
	}
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintf(os.Stderr, "lockstep-bench: at %s: %v\n", commit, err)
	}
	return commit, sections, nil
}

func needsEnv(benchmarks []suite.Benchmark) bool { return len(envNames(benchmarks)) > 0 }

// envNames are the benchmarks that need the control plane.
func envNames(benchmarks []suite.Benchmark) []string {
	var names []string
	for _, b := range benchmarks {
		if b.NeedsEnv {
			names = append(names, b.Name)
		}
	}
	return names
}

// moduleRoot walks up from dir to lockstep's go.mod.
func moduleRoot(dir string) (string, error) {
	for {
		raw, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.Contains(string(raw), "module github.com/lockstep-dev/lockstep\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside the lockstep repository (no go.mod of github.com/lockstep-dev/lockstep above the working directory); use -root")
		}
		dir = parent
	}
}
