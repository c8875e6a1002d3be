package app

import (
	"context"
	"fmt"
	"os"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/lockstep-dev/lockstep/internal/tracing"
)

// startTracing turns tracing on when the OTEL_* variables ask for it
// (internal/tracing; docs/tracing.md), the console exporter printing to
// stdout, and returns what flushes the spans not exported yet when
// lockstep stops. It runs before the webhooks are registered: they are
// traced only when it is on.
func startTracing(ctx context.Context) (func(), error) {
	shutdown, err := tracing.Setup(ctx, os.Stdout)
	if err != nil {
		return nil, fmt.Errorf("setting up tracing: %w", err)
	}
	if tracing.On() {
		ctrl.Log.WithName("lockstep").Info("tracing on (OTEL_* variables)")
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := shutdown(ctx); err != nil {
			ctrl.Log.WithName("lockstep").Info("could not export the last spans", "error", err.Error())
		}
	}, nil
}
