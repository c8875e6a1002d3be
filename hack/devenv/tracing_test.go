package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestAPIServerTracing(t *testing.T) {
	tests := []struct {
		name string
		vars map[string]string
		want string
	}{
		{"off", nil, ""},
		{"console only", map[string]string{"OTEL_TRACES_EXPORTER": "console"}, ""},
		{"OTLP over http/protobuf, which kube-apiserver does not speak", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, ""},
		{"OTLP over gRPC", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, "127.0.0.1:4317"},
		{"the traces' own endpoint and protocol", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://collector:4317",
			"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://other:4317"}, "collector:4317"},
		{"an endpoint without a scheme", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "127.0.0.1:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, "127.0.0.1:4317"},
		{"tracing turned off", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_SDK_DISABLED": "true"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, apiServerTracing(func(k string) string { return tt.vars[k] }))
		})
	}
}
