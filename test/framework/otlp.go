package framework

import (
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonv1 "go.opentelemetry.io/proto/otlp/common/v1"
	tracev1 "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
)

// OTLPReceiver is the trace endpoint of an OpenTelemetry collector (OTLP
// over gRPC) on loopback, in the test's process: kube-apiserver (see
// Options.TracingEndpoint) and lockstep send it their spans, and the test
// reads them. Stop it when done.
type OTLPReceiver struct {
	collectortrace.UnimplementedTraceServiceServer
	addr string
	srv  *grpc.Server
	done chan struct{}
	// keep says the spans are kept for Spans; otherwise only counted.
	keep bool
	n    atomic.Int64

	mu    sync.Mutex
	spans []Span
}

// Span is one span a receiver got, flattened for a test to read.
type Span struct {
	// Service is the service.name of the process that sent it
	// (apiserver, lockstep).
	Service string
	Name    string
	// TraceID, SpanID and ParentSpanID are hex; ParentSpanID is empty
	// for a root.
	TraceID, SpanID, ParentSpanID string
	// Kind is SERVER, CLIENT, INTERNAL, ...
	Kind       string
	Attributes map[string]string
	// StatusCode is Ok, Error or Unset; StatusMessage says why.
	StatusCode, StatusMessage string
	// Events are the span's events, each a name and attributes.
	Events []Event
	// Resource is the attributes of the process that sent it.
	Resource   map[string]string
	Start, End time.Time
}

// Event is an event of a span.
type Event struct {
	Name       string
	Attributes map[string]string
}

// StartOTLPReceiver listens on a free loopback port (FreePort) and
// serves OTLP's trace service there, keeping every span.
func StartOTLPReceiver() (*OTLPReceiver, error) { return startOTLP(true) }

// StartOTLPSink is StartOTLPReceiver for a benchmark: it counts the spans
// and keeps none.
func StartOTLPSink() (*OTLPReceiver, error) { return startOTLP(false) }

func startOTLP(keep bool) (*OTLPReceiver, error) {
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening for OTLP on %s: %w", addr, err)
	}
	r := &OTLPReceiver{addr: addr, srv: grpc.NewServer(), done: make(chan struct{}), keep: keep}
	collectortrace.RegisterTraceServiceServer(r.srv, r)
	go func() {
		defer close(r.done)
		_ = r.srv.Serve(ln)
	}()
	return r, nil
}

// Endpoint is where the receiver listens, host:port.
func (r *OTLPReceiver) Endpoint() string { return r.addr }

// Stop stops serving and waits until it has.
func (r *OTLPReceiver) Stop() {
	r.srv.Stop()
	<-r.done
}

// Count is how many spans the receiver got.
func (r *OTLPReceiver) Count() int64 { return r.n.Load() }

// Spans returns a copy of every span received so far (none for a sink).
func (r *OTLPReceiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Export implements OTLP's trace service.
func (r *OTLPReceiver) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	if !r.keep {
		for _, rs := range req.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				r.n.Add(int64(len(ss.GetSpans())))
			}
		}
		return &collectortrace.ExportTraceServiceResponse{}, nil
	}
	var got []Span
	for _, rs := range req.GetResourceSpans() {
		resource := attributes(rs.GetResource().GetAttributes())
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				got = append(got, spanOf(resource, s))
			}
		}
	}
	r.mu.Lock()
	r.spans = append(r.spans, got...)
	r.mu.Unlock()
	r.n.Add(int64(len(got)))
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

func spanOf(resource map[string]string, s *tracev1.Span) Span {
	out := Span{
		Service: resource["service.name"], Name: s.GetName(), Resource: resource,
		TraceID: hex.EncodeToString(s.GetTraceId()), SpanID: hex.EncodeToString(s.GetSpanId()),
		ParentSpanID: hex.EncodeToString(s.GetParentSpanId()),
		Kind:         s.GetKind().String(), Attributes: attributes(s.GetAttributes()),
		StatusCode: s.GetStatus().GetCode().String(), StatusMessage: s.GetStatus().GetMessage(),
		Start: time.Unix(0, int64(s.GetStartTimeUnixNano())), End: time.Unix(0, int64(s.GetEndTimeUnixNano())),
	}
	for _, e := range s.GetEvents() {
		out.Events = append(out.Events, Event{Name: e.GetName(), Attributes: attributes(e.GetAttributes())})
	}
	return out
}

func attributes(kvs []*commonv1.KeyValue) map[string]string {
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		out[kv.GetKey()] = valueString(kv.GetValue())
	}
	return out
}

func valueString(v *commonv1.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonv1.AnyValue_StringValue:
		return x.StringValue
	case *commonv1.AnyValue_BoolValue:
		return strconv.FormatBool(x.BoolValue)
	case *commonv1.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonv1.AnyValue_DoubleValue:
		return strconv.FormatFloat(x.DoubleValue, 'g', -1, 64)
	case *commonv1.AnyValue_BytesValue:
		return string(x.BytesValue)
	case *commonv1.AnyValue_ArrayValue:
		s := "["
		for i, e := range x.ArrayValue.GetValues() {
			if i > 0 {
				s += ","
			}
			s += valueString(e)
		}
		return s + "]"
	case *commonv1.AnyValue_KvlistValue:
		s := "{"
		for i, kv := range x.KvlistValue.GetValues() {
			if i > 0 {
				s += ","
			}
			s += kv.GetKey() + "=" + valueString(kv.GetValue())
		}
		return s + "}"
	}
	return ""
}

// writeTracingConfig writes kube-apiserver's tracing configuration into
// dir: every request sampled, its spans sent over OTLP gRPC to endpoint.
func writeTracingConfig(dir, endpoint string) (string, error) {
	path := filepath.Join(dir, "apiserver-tracing.yaml")
	config := fmt.Sprintf(`apiVersion: apiserver.config.k8s.io/v1
kind: TracingConfiguration
endpoint: %s
samplingRatePerMillion: 1000000
`, endpoint)
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		return "", fmt.Errorf("writing kube-apiserver's tracing configuration: %w", err)
	}
	return path, nil
}
