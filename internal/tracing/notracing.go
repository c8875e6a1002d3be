//go:build lockstep_notracing

package tracing

import (
	"context"
	"io"
	"net/http"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Built with the tag lockstep_notracing, lockstep has no tracing at all:
// every function here does nothing. The benchmark suite builds it so, to
// measure what tracing costs when it is off against a lockstep without
// it, in the same run.

var off trace.Span = noop.Span{}

// Setup turns nothing on.
func Setup(context.Context, io.Writer) (Shutdown, error) {
	return func(context.Context) error { return nil }, nil
}

// Use does nothing.
func Use(trace.TracerProvider) (restore func()) { return func() {} }

// On is false.
func On() bool { return false }

// Start returns ctx and a span that records nothing.
func Start(ctx context.Context, _ string, _ ...trace.SpanStartOption) (context.Context, trace.Span) {
	return ctx, off
}

// Current is a span that records nothing.
func Current(context.Context) trace.Span { return off }

// Inject does nothing.
func Inject(context.Context, http.Header) {}

// Traceparent is "".
func Traceparent(context.Context) string { return "" }

// WithTraceparent returns ctx.
func WithTraceparent(ctx context.Context, _ string) context.Context { return ctx }

// Handler is h.
func Handler(_ string, h http.Handler) http.Handler { return h }
