package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	"github.com/kelseyhightower/envconfig"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded"
)

// EmbeddedPrefix is the environment prefix of the embedded broker's own
// settings (LOCKSTEP_EMBEDDED_BROKER_REGISTRIES, ..._BBOLT_PATH, ...; see
// internal/broker/embedded/README.md).
const EmbeddedPrefix = "lockstep_embedded_broker"

// embeddedBroker runs lockstep's own OSB broker in the webhook process, on
// a loopback listener, and registers it as a ServiceBroker, so that
// lockstep works on a machine with nothing else (make run, the tests). A
// cluster runs the broker in a Deployment of its own (cmd/broker), whose
// ServiceBroker the administrator registers.
type embeddedBroker struct {
	addr     string
	name     string
	settings embedded.Settings
	client   client.Client
	logger   *slog.Logger
}

// brokerLogger is the embedded broker's logger: the manager's, so that the
// process logs in one format.
func brokerLogger(l logr.Logger) *slog.Logger {
	return slog.New(logr.ToSlogHandler(l.WithName("embedded-broker")))
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: the
// embedded broker serves on every replica.
func (e *embeddedBroker) NeedLeaderElection() bool { return false }

// LoadEmbeddedSettings reads the embedded broker's settings.
func LoadEmbeddedSettings() (embedded.Settings, error) {
	var s embedded.Settings
	if err := envconfig.Process(EmbeddedPrefix, &s); err != nil {
		return s, fmt.Errorf("reading the embedded broker's LOCKSTEP_EMBEDDED_BROKER_* settings: %w", err)
	}
	return s, nil
}

// Start implements manager.Runnable: it serves the broker until ctx ends.
func (e *embeddedBroker) Start(ctx context.Context) error {
	b, err := e.settings.Open(ctx, e.logger)
	if err != nil {
		return fmt.Errorf("opening the embedded broker: %w", err)
	}
	defer func() { _ = b.Close() }()
	if err := b.Start(ctx); err != nil {
		return fmt.Errorf("starting the embedded broker: %w", err)
	}
	ln, err := net.Listen("tcp", e.addr)
	if err != nil {
		return fmt.Errorf("the embedded broker cannot listen on %s (LOCKSTEP_EMBEDDED_BROKER_ADDR): %w", e.addr, err)
	}
	srv := &http.Server{Handler: b, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(e.logger.Handler(), slog.LevelError)}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	if err := e.register(ctx, "http://"+ln.Addr().String()); err != nil {
		_ = srv.Close()
		return err
	}
	select {
	case <-ctx.Done():
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("embedded broker: %w", err)
		}
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return srv.Shutdown(shutdown)
}

// register creates or updates the ServiceBroker that points at the
// embedded broker.
func (e *embeddedBroker) register(ctx context.Context, url string) error {
	var sb v1alpha1.ServiceBroker
	err := e.client.Get(ctx, client.ObjectKey{Name: e.name}, &sb)
	switch {
	case apierrors.IsNotFound(err):
		sb = v1alpha1.ServiceBroker{ObjectMeta: metav1.ObjectMeta{Name: e.name}, Spec: v1alpha1.ServiceBrokerSpec{URL: url}}
		err = e.client.Create(ctx, &sb)
	case err == nil && sb.Spec.URL != url:
		sb.Spec.URL = url
		err = e.client.Update(ctx, &sb)
	}
	if err != nil {
		return fmt.Errorf("registering the embedded broker as ServiceBroker %q: %w", e.name, err)
	}
	return nil
}
