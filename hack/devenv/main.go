// Command devenv is `make run`: lockstep on this machine, ready for kubectl,
// with nothing installed but Go.
//
// It starts etcd and kube-apiserver on loopback from the binaries
// hack/testbin.sh provides (controller-runtime's envtest, through
// test/framework as the tests do),
// and kube-controller-manager with the namespace and garbage-collector
// controllers (so that a deleted namespace goes, and so do objects whose
// owner is gone),
// installs lockstep's CRDs and webhook configurations (deploy/), the latter
// pointing at a URL on loopback with the CA bundle of locally generated
// certificates, and runs lockstep in this process (internal/app) with its
// embedded broker serving examples/bundles, registered as the ServiceBroker
// "embedded". It writes a kubeconfig and prints what to type next.
//
// Everything lives in one state directory (.state/, git-ignored): etcd's
// data and the embedded broker's store survive a restart; ports are
// remembered; logs are in .state/logs, appended to at every start. One devenv per state directory: a
// second one says that the first is running, and how to use or stop it.
// SIGINT, SIGTERM or SIGHUP stop lockstep, kube-controller-manager,
// kube-apiserver and etcd, and nothing is left listening.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/lockstep-dev/lockstep/test/framework/controllermanager"
)

func main() {
	var o options
	flag.StringVar(&o.root, "root", ".", "the lockstep repository (deploy/, examples/)")
	flag.StringVar(&o.state, "state", ".state", "state directory: etcd data, broker store, kubeconfig, logs")
	flag.StringVar(&o.assets, "assets", os.Getenv("KUBEBUILDER_ASSETS"), "directory with kube-apiserver, kube-controller-manager, etcd and kubectl (hack/testbin.sh prints it)")
	flag.DurationVar(&o.startTimeout, "start-timeout", 2*time.Minute, "how long to wait for everything to be ready")
	flag.Parse()
	if err := o.complete(); err != nil {
		fmt.Fprintln(os.Stderr, "make run:", err)
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	err := run(ctx, o, os.Stdout)
	var running *alreadyRunningError
	switch {
	case errors.As(err, &running):
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	case err != nil:
		fmt.Fprintln(os.Stderr, "make run:", err)
		os.Exit(1)
	}
	fmt.Println("make run: stopped; nothing it started is left running")
}

// options are the command line.
type options struct {
	root, state, assets string
	startTimeout        time.Duration
}

// complete makes paths absolute and checks that the inputs are there.
func (o *options) complete() error {
	for _, p := range []*string{&o.root, &o.state, &o.assets} {
		if *p == "" {
			continue
		}
		abs, err := filepath.Abs(*p)
		if err != nil {
			return fmt.Errorf("resolving %s: %w", *p, err)
		}
		*p = abs
	}
	if o.assets == "" {
		return errors.New("no control plane binaries: pass -assets or set KUBEBUILDER_ASSETS (`bash hack/testbin.sh` prints the directory)")
	}
	for _, b := range []string{"etcd", "kube-apiserver", controllermanager.Binary, "kubectl"} {
		if _, err := os.Stat(filepath.Join(o.assets, b)); err != nil {
			return fmt.Errorf("%s is not in %s: run `bash hack/testbin.sh` to build it: %w", b, o.assets, err)
		}
	}
	for _, p := range []string{manifestsPath(o.root), crdPath(o.root), bundlesPath(o.root)} {
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("%s is missing: -root must be the lockstep repository: %w", p, err)
		}
	}
	return nil
}

// run starts everything, prints what to do next, and stops everything when
// ctx ends (a signal) or a part fails.
func run(ctx context.Context, o options, out io.Writer) (err error) {
	s := newState(o.state)
	lock, err := s.lock()
	if err != nil {
		return err
	}
	defer lock.release()
	if err := reapLeftovers(s.dir, out); err != nil {
		return err
	}
	ports, err := s.ports()
	if err != nil {
		return err
	}
	logs, err := s.openLogs(maxLogSize, time.Now())
	if err != nil {
		return err
	}
	defer logs.close()

	fmt.Fprintf(out, "make run: starting etcd and kube-apiserver on 127.0.0.1 (state in %s)\n", shown(o.root, s.dir))
	sayTracing(out, apiServerTracing(os.Getenv))
	cp, err := startControlPlane(o, s, ports, logs)
	if err != nil {
		return err
	}
	defer func() {
		fmt.Fprintln(out, "make run: stopping kube-apiserver and etcd")
		if stopErr := cp.stop(); stopErr != nil && err == nil {
			err = stopErr
		}
	}()

	fmt.Fprintln(out, "make run: starting kube-controller-manager (namespace, garbage-collector and ClusterRole aggregation controllers)")
	cm, err := controllermanager.Start(cp.env, controllermanager.Options{
		Assets: o.assets, Dir: s.controllerManagerDir(), Out: logs.controllerManager, StartTimeout: o.startTimeout,
	})
	if err != nil {
		return fmt.Errorf("%w (see %s)", err, filepath.Join(s.logDir(), logControllerManager))
	}
	defer func() {
		fmt.Fprintln(out, "make run: stopping kube-controller-manager")
		if stopErr := cm.Stop(); stopErr != nil && err == nil {
			err = stopErr
		}
	}()

	fmt.Fprintln(out, "make run: starting lockstep (webhook server, reconcilers, embedded broker with examples/bundles)")
	lsCtx, cancel := context.WithCancel(ctx)
	ls, err := startLockstep(lsCtx, o, s, ports, cp, logs)
	if err != nil {
		cancel()
		return err
	}
	defer func() {
		fmt.Fprintln(out, "make run: stopping lockstep")
		cancel()
		if stopErr := ls.wait(); stopErr != nil && err == nil {
			err = stopErr
		}
	}()
	services, err := ls.ready(ctx, o.startTimeout)
	if err != nil {
		if ctx.Err() != nil {
			return nil // interrupted while starting
		}
		return err
	}
	if err := printNext(out, instructions{
		Root: o.root, Kubeconfig: s.kubeconfig(), Assets: o.assets, Logs: s.logDir(), State: s.dir,
		APIServer: cp.url, Metrics: ports.Metrics, Services: services, Broker: ports.Broker,
	}); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		fmt.Fprintln(out, "\nmake run: interrupted")
		return nil
	case <-cm.Done():
		if interruptedWithin(ctx, time.Second) {
			fmt.Fprintln(out, "\nmake run: interrupted")
			return nil
		}
		log := filepath.Join(s.logDir(), logControllerManager)
		return fmt.Errorf("kube-controller-manager stopped on its own (%v): deleted namespaces would stay Terminating; see %s, then start make run again", cm.Err(), log)
	case <-ls.stopped:
		log := filepath.Join(s.logDir(), logLockstep)
		if err := ls.wait(); err != nil {
			return fmt.Errorf("lockstep stopped on its own: %w (see %s)", err, log)
		}
		return fmt.Errorf("lockstep stopped on its own (see %s)", log)
	}
}

// interruptedWithin reports whether make run gets a stop signal within d.
// Ctrl-C in the terminal reaches kube-controller-manager as well as make
// run: when make run's own signal follows at once, that is why it ended.
func interruptedWithin(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return true
	case <-time.After(d):
		return false
	}
}
