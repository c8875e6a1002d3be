package osbclient_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/broker/osbclient"
	"github.com/lockstep-dev/lockstep/internal/tracing"
)

// traced turns lockstep's tracing on for the test, into memory.
func traced(t *testing.T) *tracetest.InMemoryExporter {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	restore := tracing.Use(tp)
	t.Cleanup(func() {
		restore()
		_ = tp.Shutdown(context.Background())
	})
	return exp
}

// TestEveryRequestCarriesTheTrace: with tracing on, every request to the
// broker is a client span of the caller's trace and carries its W3C
// traceparent, polls included; a span holds what was asked of whom and
// the answer's status, never the parameters, the credentials or the
// broker's words.
func TestEveryRequestCarriesTheTrace(t *testing.T) {
	exp := traced(t)
	b := fakebroker.New(t, fakebroker.WithBasicAuth("osb-user", "osb-password-1"), fakebroker.WithCredentialMarker("cred-marker-1"))
	c := newClient(t, b, func(cfg *osbclient.Config) { cfg.Auth = osbclient.BasicAuth("osb-user", "osb-password-1") })
	b.Script(fakebroker.OpProvision, fakebroker.Respond{Async: &fakebroker.Async{InProgressPolls: 2, Description: "made with storageGB 10"}})

	ctx, parent := tracing.Start(testCtx(t), tracing.SpanBroker)
	resp, err := c.Provision(ctx, meta, provisionReq("inst-1"))
	require.NoError(t, err)
	require.True(t, resp.Async)
	last, err := c.PollInstance(ctx, meta, osbclient.InstanceLastOperationRequest{InstanceID: "inst-1", Operation: resp.Operation},
		osbclient.PollOptions{MinInterval: time.Millisecond})
	require.NoError(t, err)
	require.Equal(t, "succeeded", string(last.State))
	_, err = c.Bind(ctx, meta, bindReq("inst-1", "bind-1"))
	require.NoError(t, err)
	parent.End()

	calls := b.Calls()
	require.Len(t, calls, 5, "provision, three polls, bind")
	for _, call := range calls {
		tp := call.Header.Get("traceparent")
		assert.True(t, strings.HasPrefix(tp, "00-"+parent.SpanContext().TraceID().String()+"-"), "%s carries the trace: %q", call.Op, tp)
	}

	spans := exp.GetSpans()
	byName := map[string][]tracetest.SpanStub{}
	for _, s := range spans {
		byName[s.Name] = append(byName[s.Name], s)
		assert.Equal(t, parent.SpanContext().TraceID(), s.SpanContext.TraceID(), "%s: one trace", s.Name)
		for _, kv := range s.Attributes {
			v := kv.Value.Emit()
			for _, secret := range []string{"osb-password-1", "cred-marker-1", "storageGB", "eu", "reader", "made with"} {
				assert.NotContains(t, v, secret, "%s: %s", s.Name, kv.Key)
			}
		}
	}
	require.Len(t, byName[tracing.OSB("provision")], 1)
	provision := byName[tracing.OSB("provision")][0]
	assert.Equal(t, trace.SpanKindClient, provision.SpanKind)
	assert.Equal(t, parent.SpanContext().SpanID(), provision.Parent.SpanID())
	assert.Contains(t, provision.Attributes, attribute.Int("http.response.status_code", http.StatusAccepted))
	assert.Contains(t, provision.Attributes, attribute.String("url.path", "/v2/service_instances/inst-1"))
	assert.Equal(t, "00-"+provision.SpanContext.TraceID().String()+"-"+provision.SpanContext.SpanID().String()+"-01",
		calls[0].Header.Get("traceparent"), "the broker's request is a child of its span")

	require.Len(t, byName[tracing.SpanPoll], 1)
	poll := byName[tracing.SpanPoll][0]
	assert.Contains(t, poll.Attributes, tracing.AttrPolls.Int(3))
	assert.Contains(t, poll.Attributes, tracing.AttrState.String("succeeded"))
	require.Len(t, byName[tracing.OSB("instance_last_operation")], 3)
	for _, s := range byName[tracing.OSB("instance_last_operation")] {
		assert.Equal(t, poll.SpanContext.SpanID(), s.Parent.SpanID(), "each poll under the polling")
	}
	assert.Len(t, byName[tracing.OSB("bind")], 1)
}

// TestARequestWithoutAnAnswerIsAnError: a request the broker never
// answered is an error of its span, with what kind of failure.
func TestARequestWithoutAnAnswerIsAnError(t *testing.T) {
	exp := traced(t)
	b := fakebroker.New(t)
	c := newClient(t, b, func(cfg *osbclient.Config) { cfg.Timeout = 100 * time.Millisecond })
	b.Script(fakebroker.OpProvision, fakebroker.Respond{Hang: true})
	_, err := c.Provision(testCtx(t), meta, provisionReq("inst-1"))
	require.Error(t, err)
	spans := exp.GetSpans()
	require.Len(t, spans, 1)
	assert.Equal(t, "Error", spans[0].Status.Code.String())
	assert.Contains(t, spans[0].Attributes, tracing.AttrErrorType.String("timeout"))
}
