package tracing

import (
	"context"
	"net/http"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// The names of lockstep's spans (see doc.go); a broker request's is
// "osb." and its request (OSB).
const (
	SpanAdmission = "lockstep.admission"
	SpanChecks    = "lockstep.checks"
	SpanLock      = "lockstep.lock"
	SpanBroker    = "lockstep.broker"
	SpanPoll      = "osb.poll"
	SpanRecord    = "lockstep.record"
	SpanFollow    = "lockstep.follow"
	SpanResync    = "lockstep.resync"
)

// OSB is the name of the span of one request to a broker.
func OSB(request string) string { return "osb." + request }

// The attributes of lockstep's spans. None holds a parameter value, a
// credential, a broker's description or an error message.
const (
	// AttrWebhook is the path of the webhook asked (lockstep.admission).
	AttrWebhook = attribute.Key("lockstep.webhook")
	// AttrOperation is the admission request's operation (CREATE, UPDATE,
	// DELETE).
	AttrOperation = attribute.Key("lockstep.admission.operation")
	// AttrDryRun says the admission request is a dry run.
	AttrDryRun = attribute.Key("lockstep.admission.dry_run")
	// AttrResult and AttrReason are the admission's decision, as
	// lockstep_admission_decisions_total counts it.
	AttrResult = attribute.Key("lockstep.admission.result")
	AttrReason = attribute.Key("lockstep.admission.reason")
	// AttrKind, AttrNamespace and AttrName name the object.
	AttrKind      = attribute.Key("lockstep.object.kind")
	AttrNamespace = attribute.Key("k8s.namespace.name")
	AttrName      = attribute.Key("lockstep.object.name")
	// AttrFieldErrors counts the field errors the static checks found.
	AttrFieldErrors = attribute.Key("lockstep.checks.field_errors")
	// AttrVerb is the broker operation's verb (provision, update, ...).
	AttrVerb = attribute.Key("lockstep.verb")
	// AttrRecord names the operation's record (BrokerOperation).
	AttrRecord = attribute.Key("lockstep.operation")
	// AttrPhase is the phase of the operation's record.
	AttrPhase = attribute.Key("lockstep.phase")
	// AttrLock says how taking the lock went: taken, held (by another
	// operation: AttrHolder names its record), failed.
	AttrLock   = attribute.Key("lockstep.lock")
	AttrHolder = attribute.Key("lockstep.lock.holder")
	// AttrBroker is the ServiceBroker's name.
	AttrBroker = attribute.Key("lockstep.broker")
	// AttrVerdict is what a broker call came to: done, refused, unknown,
	// running.
	AttrVerdict = attribute.Key("lockstep.verdict")
	// AttrRequest is the OSB request (provision, instance_last_operation,
	// ...).
	AttrRequest = attribute.Key("osb.request")
	// AttrInstanceID and AttrBindingID are the OSB ids.
	AttrInstanceID = attribute.Key("osb.instance_id")
	AttrBindingID  = attribute.Key("osb.binding_id")
	// AttrPolls counts last_operation requests; AttrState is the last
	// state the broker gave.
	AttrPolls = attribute.Key("osb.polls")
	AttrState = attribute.Key("osb.state")
	// AttrErrorCode is the OSB error code of a refusal (ConcurrencyError,
	// AsyncRequired, ...).
	AttrErrorCode = attribute.Key("osb.error_code")
	// AttrResyncResult is what resync found (InSync, PlanDrift, ...).
	AttrResyncResult = attribute.Key("lockstep.resync.result")
	// The HTTP attributes of a broker request, as OpenTelemetry's
	// semantic conventions name them.
	AttrMethod     = attribute.Key("http.request.method")
	AttrStatusCode = attribute.Key("http.response.status_code")
	AttrServer     = attribute.Key("server.address")
	AttrPort       = attribute.Key("server.port")
	AttrPath       = attribute.Key("url.path")
	AttrErrorType  = attribute.Key("error.type")
)

// AnnotationTraceparent on a BrokerOperation is the W3C traceparent of the
// span that started the operation: the operations reconciler's follow-ups
// join that trace.
const AnnotationTraceparent = "lockstep.dev/traceparent"

// instrumentation names lockstep's tracer.
const instrumentation = "github.com/lockstep-dev/lockstep"

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
