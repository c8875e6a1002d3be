//go:build !lockstep_notracing

package tracing

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// recording turns tracing on for the test, into an in-memory exporter.
func recording(t *testing.T) *tracetest.InMemoryExporter {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	restore := Use(tp)
	t.Cleanup(func() {
		restore()
		_ = tp.Shutdown(context.Background())
	})
	return exp
}

// TestOffCostsNothing: with tracing off, a span is no allocation and the
// context is the caller's own, a traceparent is never sent, and a webhook
// is served by its own handler.
func TestOffCostsNothing(t *testing.T) {
	require.False(t, On())
	ctx := context.Background()
	allocs := testing.AllocsPerRun(100, func() {
		c, span := Start(ctx, SpanLock)
		if span.IsRecording() {
			t.Fatal("a span off records")
		}
		span.End()
		if c != ctx {
			t.Fatal("Start returned another context")
		}
	})
	assert.Zero(t, allocs)
	h := http.Header{}
	Inject(ctx, h)
	assert.Empty(t, h)
	assert.Empty(t, Traceparent(ctx))
	served := &counting{}
	assert.Same(t, served, Handler("/validate", served), "the webhook's own handler")
}

type counting struct{ n int }

func (c *counting) ServeHTTP(http.ResponseWriter, *http.Request) { c.n++ }

// TestAWebhookRequestJoinsTheAPIServersTrace: the traceparent the API
// server sends makes lockstep's admission span a child of the API
// server's, and a broker request made under it carries a traceparent of
// the same trace.
func TestAWebhookRequestJoinsTheAPIServersTrace(t *testing.T) {
	exp := recording(t)
	const apiserver = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	var sent http.Header
	h := Handler("/validate-lockstep-dev-v1alpha1-serviceinstance", http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		ctx, span := Start(r.Context(), OSB("provision"), trace.WithSpanKind(trace.SpanKindClient))
		defer span.End()
		sent = http.Header{}
		Inject(ctx, sent)
	}))
	req := httptest.NewRequest(http.MethodPost, "/validate-lockstep-dev-v1alpha1-serviceinstance", nil)
	req.Header.Set("traceparent", apiserver)
	h.ServeHTTP(httptest.NewRecorder(), req)

	spans := exp.GetSpans()
	require.Len(t, spans, 2)
	osb, admission := spans[0], spans[1]
	assert.Equal(t, SpanAdmission, admission.Name)
	assert.Equal(t, trace.SpanKindServer, admission.SpanKind)
	assert.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", admission.SpanContext.TraceID().String(), "the API server's trace")
	assert.Equal(t, "00f067aa0ba902b7", admission.Parent.SpanID().String(), "under the API server's span")
	assert.True(t, admission.Parent.IsRemote())
	assert.Contains(t, admission.Attributes, AttrWebhook.String("/validate-lockstep-dev-v1alpha1-serviceinstance"))
	assert.Equal(t, admission.SpanContext.SpanID(), osb.Parent.SpanID())
	assert.Equal(t, "00-4bf92f3577b34da6a3ce929d0e0e4736-"+osb.SpanContext.SpanID().String()+"-01", sent.Get("traceparent"),
		"the broker gets the trace, under its request's span")
}

// TestAFollowUpJoinsTheTraceOfItsOperation: the traceparent a record
// keeps puts a follow-up after admission into the admission's trace.
func TestAFollowUpJoinsTheTraceOfItsOperation(t *testing.T) {
	exp := recording(t)
	ctx, admission := Start(context.Background(), SpanAdmission)
	kept := Traceparent(ctx)
	admission.End()
	require.NotEmpty(t, kept)

	_, follow := Start(WithTraceparent(context.Background(), kept), SpanFollow)
	follow.End()
	spans := exp.GetSpans()
	require.Len(t, spans, 2)
	assert.Equal(t, spans[0].SpanContext.TraceID(), spans[1].SpanContext.TraceID())
	assert.Equal(t, spans[0].SpanContext.SpanID(), spans[1].Parent.SpanID())
	assert.Equal(t, context.Background(), WithTraceparent(context.Background(), ""), "no traceparent: a trace of its own")
}
