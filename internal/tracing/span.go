//go:build !lockstep_notracing

package tracing

import (
	"context"
	"net/http"
	"sync/atomic"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// state is the tracer in use; nil while tracing is off.
type state struct {
	tracer trace.Tracer
}

var (
	current    atomic.Pointer[state]
	propagator = propagation.TraceContext{}
	// off is the span of tracing off, boxed once.
	off trace.Span = noop.Span{}
)

// Use makes lockstep's spans go to tp (Setup's provider, or a test's with
// an in-memory exporter) and returns what turns tracing off again.
func Use(tp trace.TracerProvider) (restore func()) {
	prev := current.Swap(&state{tracer: tp.Tracer(instrumentation)})
	return func() { current.Store(prev) }
}

// On reports whether tracing is on.
func On() bool { return current.Load() != nil }

// Start starts a span named name as a child of the span in ctx (or a
// root). Off, it returns ctx itself and a span that records nothing,
// without allocating.
func Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	s := current.Load()
	if s == nil {
		return ctx, off
	}
	return s.tracer.Start(ctx, name, opts...)
}

// Current is the span in ctx: attributes set on it go to that span
// (nothing happens when tracing is off).
func Current(ctx context.Context) trace.Span {
	if current.Load() == nil {
		return off
	}
	return trace.SpanFromContext(ctx)
}

// Inject puts the W3C traceparent of the span in ctx into h (an OSB
// request's headers); off, it does nothing.
func Inject(ctx context.Context, h http.Header) {
	if current.Load() == nil {
		return
	}
	propagator.Inject(ctx, propagation.HeaderCarrier(h))
}

// Traceparent is the W3C traceparent of the span in ctx, or "" when
// there is none (tracing off, or no span).
func Traceparent(ctx context.Context) string {
	if current.Load() == nil {
		return ""
	}
	c := propagation.MapCarrier{}
	propagator.Inject(ctx, c)
	return c["traceparent"]
}

// WithTraceparent returns ctx with the remote span a traceparent names as
// its parent: a follow-up joins the trace of the request that started it.
func WithTraceparent(ctx context.Context, traceparent string) context.Context {
	if traceparent == "" || current.Load() == nil {
		return ctx
	}
	return propagator.Extract(ctx, propagation.MapCarrier{"traceparent": traceparent})
}

// Handler serves h as lockstep's webhook at path, each request in a
// lockstep.admission span joined to the trace of the traceparent the API
// server sends. Off (when h is registered), it is h itself.
func Handler(path string, h http.Handler) http.Handler {
	if !On() {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := propagator.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		ctx, span := Start(ctx, SpanAdmission, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(AttrWebhook.String(path)))
		defer span.End()
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}
