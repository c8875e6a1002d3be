package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "broker:", err)
		os.Exit(1)
	}
}

// run serves until ctx ends.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "-h", "--help", "help":
			return usage(stdout)
		default:
			return fmt.Errorf("unknown argument %q: the broker takes no arguments; it is configured through %s_* environment variables (broker --help)", args[0], prefix)
		}
	}
	cfg, err := loadConfig()
	if err != nil {
		return err
	}
	base, err := cfg.logger(stderr)
	if err != nil {
		return err
	}
	ctrllog.SetLogger(base) // the certificate watch's
	logger := slog.New(logr.ToSlogHandler(base))
	if cfg.Username == "" {
		logger.Warn("no " + prefix + "_USERNAME: the OSB API accepts requests without authentication")
	}

	b, err := cfg.Settings.Open(ctx, logger)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		_ = b.Close()
		return fmt.Errorf("listen on %s: %w", cfg.Listen, err)
	}
	srv := &http.Server{Handler: b, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	if cfg.TLSCertFile != "" {
		// The certificate is read again when its files change (a renewed
		// Secret), without a restart.
		certs, err := certwatcher.New(cfg.TLSCertFile, cfg.TLSKeyFile)
		if err != nil {
			_ = ln.Close()
			_ = b.Close()
			return fmt.Errorf("read the serving certificate: %w", err)
		}
		go func() {
			if err := certs.Start(watchCtx); err != nil {
				logger.Error("watch the serving certificate for renewals", "error", err)
			}
		}()
		// HTTP/1.1 only, as lockstep's own servers: an HTTP/2 client can
		// open and reset streams faster than a server cancels their work
		// (the rapid-reset attacks), and an action reaches the broker on
		// loopback, where no NetworkPolicy applies. lockstep's client
		// speaks either.
		srv.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: certs.GetCertificate, NextProtos: []string{"http/1.1"}}
		srv.Protocols = new(http.Protocols)
		srv.Protocols.SetHTTP1(true)
		ln = tls.NewListener(ln, srv.TLSConfig)
	}
	if err := b.Start(ctx); err != nil {
		_ = ln.Close()
		_ = b.Close()
		return err
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	logger.Info("broker listening", "address", ln.Addr().String(), "tls", cfg.TLSCertFile != "", "store", cfg.Store, "runner", b.RunnerID())

	var serveErr error
	select {
	case <-ctx.Done():
		logger.Info("shutting down")
	case serveErr = <-served:
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		logger.Warn("shut the HTTP server down", "error", err)
	}
	closeErr := b.Close()
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", serveErr)
	}
	return closeErr
}
