package main

import (
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
)

// apiServerTracing is where kube-apiserver sends its spans (host:port),
// or "" to leave its tracing off: with lockstep's spans going over OTLP
// gRPC (OTEL_EXPORTER_OTLP_PROTOCOL=grpc and an endpoint), the API server
// sends its own to the same collector, every request sampled, so that
// each trace starts at the API server. kube-apiserver speaks OTLP over
// gRPC only.
func apiServerTracing(getenv func(string) string) string {
	first := func(names ...string) string {
		for _, n := range names {
			if v := strings.TrimSpace(getenv(n)); v != "" {
				return v
			}
		}
		return ""
	}
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") || first("OTEL_TRACES_EXPORTER") == "none" ||
		first("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL") != "grpc" {
		return ""
	}
	endpoint := first("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
	if u, err := url.Parse(endpoint); err == nil && u.Host != "" {
		return u.Host
	}
	return endpoint
}

// sayTracing tells where the spans go, when tracing is on.
func sayTracing(out io.Writer, apiserver string) {
	switch exporter := os.Getenv("OTEL_TRACES_EXPORTER"); {
	case apiserver != "":
		fmt.Fprintf(out, "make run: tracing on: lockstep's spans and kube-apiserver's go to %s (docs/tracing.md)\n", apiserver)
	case strings.Contains(exporter, "console"):
		fmt.Fprintln(out, "make run: tracing on: lockstep prints every span here, as a line of JSON (docs/tracing.md)")
	case strings.Contains(exporter, "otlp") || os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "":
		fmt.Fprintln(out, "make run: tracing on: lockstep's spans go over OTLP (OTEL_EXPORTER_OTLP_*); kube-apiserver's only with OTEL_EXPORTER_OTLP_PROTOCOL=grpc (docs/tracing.md)")
	}
}
