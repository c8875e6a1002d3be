// Command lockstep-bench runs lockstep's benchmark suite and
// writes the results as markdown.
//
//	lockstep-bench -out bench/RESULTS.md            # everything, full sizes
//	lockstep-bench -only admission,scale -sizes tiny
//
// The benchmarks that need a control plane (admission, e2e, broker,
// scale) take kube-apiserver, etcd and kubectl from -assets, by default
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
	"strings"
	"syscall"
	"time"

	"github.com/lockstep-dev/lockstep/bench/env"
	"github.com/lockstep-dev/lockstep/bench/report"
	"github.com/lockstep-dev/lockstep/bench/suite"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "lockstep-bench:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	flags := flag.NewFlagSet("lockstep-bench", flag.ContinueOnError)
	out := flags.String("out", "", "write the results (markdown) to this file; empty: stdout")
	sizes := flags.String("sizes", "full", "full (make bench) or tiny (a quick check that everything runs)")
	only := flags.String("only", "", "comma-separated benchmarks to run (micro, admission, e2e, broker, scale, embedded); empty: all")
	assets := flags.String("assets", os.Getenv("KUBEBUILDER_ASSETS"), "directory with kube-apiserver, etcd and kubectl")
	root := flags.String("root", "", "repository root; empty: found from the working directory")
	timeout := flags.Duration("timeout", 40*time.Minute, "stop everything after this long")
	keep := flags.Bool("keep", false, "keep the working directory (binaries, lockstep's log) for inspection")
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

	rep := report.Report{Title: "lockstep benchmark results", Started: time.Now(), Preface: suite.Preface(),
		Command: "make bench", Machine: report.DetectMachine(ctx, *root, *assets)}
	s := &suite.Suite{Root: *root, Sizes: sz, Progress: os.Stderr}
	defer s.Close()
	if needsEnv(benchmarks) {
		if *assets == "" {
			return errors.New("no control plane binaries for " + strings.Join(envNames(benchmarks), ", ") +
				": set KUBEBUILDER_ASSETS or -assets (`bash hack/testbin.sh` prints the directory)")
		}
		e, err := env.Start(ctx, env.Options{Root: *root, Assets: *assets, Progress: os.Stderr, Keep: *keep})
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
