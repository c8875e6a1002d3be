//go:build !lockstep_notracing

package tracing

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// The standard variables Setup reads itself; the OTLP exporters read
// theirs (OTEL_EXPORTER_OTLP_ENDPOINT, _HEADERS, _TIMEOUT, _INSECURE,
// _CERTIFICATE, ...), the SDK its sampler (OTEL_TRACES_SAMPLER, _ARG) and
// batching (OTEL_BSP_*), the resource OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES.
const (
	envDisabled      = "OTEL_SDK_DISABLED"
	envExporter      = "OTEL_TRACES_EXPORTER"
	envEndpoint      = "OTEL_EXPORTER_OTLP_ENDPOINT"
	envTraceEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	envProtocol      = "OTEL_EXPORTER_OTLP_PROTOCOL"
	envTraceProtocol = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	envServiceName   = "OTEL_SERVICE_NAME"
)

// Setup turns tracing on when the environment asks for it, and returns
// what flushes and stops it. Tracing is off unless OTEL_TRACES_EXPORTER
// names an exporter (otlp, console; several comma-separated), or is unset
// and an OTLP endpoint (OTEL_EXPORTER_OTLP_ENDPOINT,
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set; OTEL_SDK_DISABLED=true
// turns it off whatever else is set. Off, nothing is installed and every
// span of this package costs nothing. console prints every span to out as
// a line of JSON; otlp sends them over http/protobuf, or gRPC
// (OTEL_EXPORTER_OTLP_PROTOCOL=grpc).
func Setup(ctx context.Context, out io.Writer) (Shutdown, error) {
	return setup(ctx, os.Getenv, out)
}

func setup(ctx context.Context, getenv func(string) string, out io.Writer) (Shutdown, error) {
	exporters, err := exportersOf(getenv)
	if err != nil || len(exporters) == 0 {
		return func(context.Context) error { return nil }, err
	}
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(serviceResource(ctx, getenv))}
	var made []sdktrace.SpanExporter
	for _, name := range exporters {
		e, err := newExporter(ctx, name, getenv, out)
		if err != nil {
			for _, m := range made {
				_ = m.Shutdown(ctx)
			}
			return nil, err
		}
		made = append(made, e)
		opts = append(opts, sdktrace.WithBatcher(e))
	}
	tp := sdktrace.NewTracerProvider(opts...)
	restore := Use(tp)
	return func(ctx context.Context) error {
		restore()
		return tp.Shutdown(ctx)
	}, nil
}

// exportersOf reads which exporters the environment names; none: off.
func exportersOf(getenv func(string) string) ([]string, error) {
	if strings.EqualFold(strings.TrimSpace(getenv(envDisabled)), "true") {
		return nil, nil
	}
	value := strings.TrimSpace(getenv(envExporter))
	if value == "" {
		if getenv(envEndpoint) != "" || getenv(envTraceEndpoint) != "" {
			return []string{"otlp"}, nil
		}
		return nil, nil
	}
	var out []string
	for _, name := range strings.Split(value, ",") {
		switch name = strings.TrimSpace(name); name {
		case "none":
			return nil, nil
		case "otlp", "console":
			out = append(out, name)
		default:
			return nil, fmt.Errorf("%s=%q: lockstep exports spans with otlp or console (or none); %q is not one of them", envExporter, value, name)
		}
	}
	return out, nil
}

// newExporter makes the exporter called name.
func newExporter(ctx context.Context, name string, getenv func(string) string, out io.Writer) (sdktrace.SpanExporter, error) {
	if name == "console" {
		return stdouttrace.New(stdouttrace.WithWriter(out))
	}
	protocol := getenv(envTraceProtocol)
	if protocol == "" {
		protocol = getenv(envProtocol)
	}
	var (
		e   sdktrace.SpanExporter
		err error
	)
	switch protocol {
	case "", "http/protobuf":
		e, err = otlptracehttp.New(ctx)
	case "grpc":
		e, err = otlptracegrpc.New(ctx)
	default:
		return nil, fmt.Errorf("%s=%q: lockstep sends OTLP over http/protobuf (the default) or grpc", envProtocol, protocol)
	}
	if err != nil {
		return nil, fmt.Errorf("creating the OTLP span exporter (OTEL_EXPORTER_OTLP_*): %w", err)
	}
	return e, nil
}

// serviceResource describes lockstep to the spans' reader: service.name
// lockstep unless OTEL_SERVICE_NAME says otherwise, with the attributes of
// OTEL_RESOURCE_ATTRIBUTES.
func serviceResource(ctx context.Context, getenv func(string) string) *resource.Resource {
	name := getenv(envServiceName)
	if name == "" {
		name = ServiceName
	}
	r, err := resource.New(ctx, resource.WithFromEnv(), resource.WithTelemetrySDK(),
		resource.WithAttributes(semconv.ServiceName(name)))
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return resource.NewSchemaless(semconv.ServiceName(name))
	}
	return r
}
