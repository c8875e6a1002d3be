package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/app"
)

// brokerName is the ServiceBroker the embedded broker registers.
const brokerName = "embedded"

// lockstepRun is lockstep running in this process.
type lockstepRun struct {
	cfg    app.Config
	client client.Client
	// stopped is closed when app.Run has returned; err is what it returned.
	stopped chan struct{}
	err     error
}

// embeddedEnv are the embedded broker's settings (internal/broker/embedded/README.md):
// the sample bundles, and its store in the state directory. A variable
// already set in the environment wins.
func embeddedEnv(o options, s *state) map[string]string {
	return map[string]string{
		"LOCKSTEP_EMBEDDED_BROKER_REGISTRIES": "samples=local:" + bundlesPath(o.root),
		"LOCKSTEP_EMBEDDED_BROKER_BBOLT_PATH": filepath.Join(s.brokerDir(), "broker.db"),
		"LOCKSTEP_EMBEDDED_BROKER_WORK_DIR":   filepath.Join(s.brokerDir(), "work"),
	}
}

// lockstepConfig is lockstep's configuration: LOCKSTEP_* from the
// environment (so that any setting can be tried), with what devenv manages
// (addresses, certificates, the embedded broker, logs) set here.
func lockstepConfig(ports Ports, certDir string) (app.Config, error) {
	cfg, err := app.LoadConfig()
	if err != nil {
		return cfg, err
	}
	cfg.WebhookHost = "127.0.0.1"
	cfg.WebhookPort = ports.Webhook
	cfg.CertDir = certDir
	cfg.MetricsAddr = "127.0.0.1:" + strconv.Itoa(ports.Metrics)
	// Plain HTTP on loopback: curl reads it without a token.
	cfg.MetricsSecure = false
	cfg.HealthAddr = "127.0.0.1:" + strconv.Itoa(ports.Health)
	cfg.EmbeddedBroker = true
	cfg.EmbeddedBrokerAddr = "127.0.0.1:" + strconv.Itoa(ports.Broker)
	cfg.EmbeddedBrokerName = brokerName
	cfg.LogFormat = "console"
	return cfg, cfg.Validate()
}

// startLockstep runs lockstep (internal/app) in this process, against the
// control plane, with every log going to the state directory.
func startLockstep(ctx context.Context, o options, s *state, ports Ports, cp *controlPlane, logs *logFiles) (*lockstepRun, error) {
	for k, v := range embeddedEnv(o, s) {
		if _, set := os.LookupEnv(k); set {
			continue
		}
		if err := os.Setenv(k, v); err != nil {
			return nil, fmt.Errorf("setting %s: %w", k, err)
		}
	}
	if err := os.MkdirAll(s.brokerDir(), 0o700); err != nil {
		return nil, fmt.Errorf("creating %s: %w", s.brokerDir(), err)
	}
	cfg, err := lockstepConfig(ports, cp.env.WebhookInstallOptions.LocalServingCertDir)
	if err != nil {
		return nil, err
	}
	logger := app.LazyValues(zap.New(zap.WriteTo(logs.lockstep), app.Logger(cfg)))
	ctrl.SetLogger(logger)
	klog.SetLogger(logger.WithName("client-go"))
	slog.SetDefault(slog.New(slog.NewTextHandler(logs.lockstep, nil)))

	c, err := client.New(cp.admin, client.Options{Scheme: app.Scheme()})
	if err != nil {
		return nil, fmt.Errorf("creating a client: %w", err)
	}
	r := &lockstepRun{cfg: cfg, client: c, stopped: make(chan struct{})}
	go func() {
		defer close(r.stopped)
		r.err = app.Run(ctx, cfg, cp.admin)
	}()
	return r, nil
}

// ready waits until the webhook server serves TLS and the embedded broker's
// catalog is loaded, and returns the services it offers.
func (r *lockstepRun) ready(ctx context.Context, timeout time.Duration) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	addr := net.JoinHostPort(r.cfg.WebhookHost, strconv.Itoa(r.cfg.WebhookPort))
	if err := r.poll(ctx, func() bool { return servesTLS(addr) }); err != nil {
		return nil, fmt.Errorf("the webhook server did not serve on %s: %w", addr, err)
	}
	var sb v1alpha1.ServiceBroker
	err := r.poll(ctx, func() bool {
		err := r.client.Get(ctx, client.ObjectKey{Name: brokerName}, &sb)
		return err == nil && meta.IsStatusConditionTrue(sb.Status.Conditions, v1alpha1.ConditionReady)
	})
	if err != nil {
		return nil, fmt.Errorf("the embedded broker's catalog did not load (ServiceBroker %q: %v): %w", brokerName, sb.Status.Conditions, err)
	}
	var services []string
	for _, svc := range sb.Status.Services {
		services = append(services, svc.Name)
	}
	sort.Strings(services)
	return services, nil
}

// poll calls ok every 100ms until it is true, lockstep stops or ctx ends.
func (r *lockstepRun) poll(ctx context.Context, ok func() bool) error {
	return wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(context.Context) (bool, error) {
		select {
		case <-r.stopped:
			if r.err == nil {
				return false, errors.New("lockstep stopped")
			}
			return false, fmt.Errorf("lockstep stopped: %w", r.err)
		default:
		}
		return ok(), nil
	})
}

// wait waits for app.Run to return (after its context was cancelled) and
// returns its error.
func (r *lockstepRun) wait() error {
	<-r.stopped
	return r.err
}

// servesTLS reports whether a TLS server answers at addr.
func servesTLS(addr string) bool {
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // a liveness probe, nothing is sent
	if err != nil {
		return false
	}
	_ = conn.Close()
	return true
}
