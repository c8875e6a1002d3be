package framework

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/lockstep-dev/lockstep/internal/app"
)

// Lockstep is lockstep's manager running in the test's process.
type Lockstep struct {
	// Logs is what lockstep (client-go and the embedded broker in it
	// included) logs.
	Logs *LogBuffer

	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

// RunLockstep runs lockstep with cfg in-process, as restConfig (the
// cluster administrator when nil), on the host, port and certificates
// envtest prepared for the webhook configurations (cfg's own are
// replaced), and returns once it serves TLS. It logs into Logs.
func (cp *ControlPlane) RunLockstep(ctx context.Context, cfg app.Config, restConfig *rest.Config) (*Lockstep, error) {
	if restConfig == nil {
		restConfig = cp.Config
	}
	wh := cp.Env.WebhookInstallOptions
	cfg.WebhookHost, cfg.WebhookPort, cfg.CertDir = wh.LocalServingHost, wh.LocalServingPort, wh.LocalServingCertDir

	l := &Lockstep{Logs: &LogBuffer{}, done: make(chan struct{})}
	logger := app.LazyValues(zap.New(zap.WriteTo(l.Logs), zap.UseDevMode(true)))
	ctrl.SetLogger(logger)
	klog.SetLogger(logger.WithName("client-go"))
	// The embedded broker logs through slog's default logger.
	slog.SetDefault(slog.New(slog.NewTextHandler(l.Logs, nil)))
	ctx, l.cancel = context.WithCancel(ctx)
	go func() {
		defer close(l.done)
		l.err = app.Run(ctx, cfg, restConfig)
	}()
	stopped := func() error {
		select {
		case <-l.done:
			return fmt.Errorf("lockstep stopped: %v", l.err)
		default:
			return nil
		}
	}
	if err := WaitServing(ctx, cp.WebhookAddr(), 30*time.Second, stopped); err != nil {
		_ = l.Stop()
		return nil, fmt.Errorf("%w\nlockstep's log:\n%s", err, l.Logs)
	}
	return l, nil
}

// Stop stops lockstep and waits until it has ended; it returns how it
// ended.
func (l *Lockstep) Stop() error {
	l.cancel()
	<-l.done
	return l.err
}
