//go:build !lockstep_notracing

package tracing

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestExportersOf(t *testing.T) {
	tests := []struct {
		name string
		vars map[string]string
		want []string
		err  string
	}{
		{name: "nothing set: off", vars: nil},
		{name: "an OTLP endpoint turns it on", vars: map[string]string{envEndpoint: "http://collector:4318"}, want: []string{"otlp"}},
		{name: "a traces endpoint too", vars: map[string]string{envTraceEndpoint: "http://collector:4318/v1/traces"}, want: []string{"otlp"}},
		{name: "console", vars: map[string]string{envExporter: "console"}, want: []string{"console"}},
		{name: "both", vars: map[string]string{envExporter: "otlp, console"}, want: []string{"otlp", "console"}},
		{name: "none wins over an endpoint", vars: map[string]string{envExporter: "none", envEndpoint: "http://collector:4318"}},
		{name: "the SDK disabled wins over everything", vars: map[string]string{envDisabled: "true", envExporter: "console"}},
		{name: "an exporter lockstep does not have", vars: map[string]string{envExporter: "zipkin"},
			err: `OTEL_TRACES_EXPORTER="zipkin": lockstep exports spans with otlp or console (or none); "zipkin" is not one of them`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := exportersOf(env(tt.vars))
			if tt.err != "" {
				assert.EqualError(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestSetupOffInstallsNothing(t *testing.T) {
	shutdown, err := setup(context.Background(), env(nil), nil)
	require.NoError(t, err)
	assert.False(t, On())
	assert.NoError(t, shutdown(context.Background()))
}

func TestSetupRefusesAProtocolItDoesNotSpeak(t *testing.T) {
	_, err := setup(context.Background(), env(map[string]string{envExporter: "otlp", envProtocol: "http/json"}), nil)
	assert.EqualError(t, err, `OTEL_EXPORTER_OTLP_PROTOCOL="http/json": lockstep sends OTLP over http/protobuf (the default) or grpc`)
	assert.False(t, On())
}

// TestConsolePrintsEverySpan: OTEL_TRACES_EXPORTER=console (make run's
// tracing) prints each span as JSON, named, with lockstep's service name,
// once the spans are flushed.
func TestConsolePrintsEverySpan(t *testing.T) {
	var out bytes.Buffer
	shutdown, err := setup(context.Background(), env(map[string]string{envExporter: "console"}), &out)
	require.NoError(t, err)
	require.True(t, On())
	_, span := Start(context.Background(), SpanChecks)
	span.End()
	require.NoError(t, shutdown(context.Background()))
	assert.False(t, On(), "shut down: off again")

	var printed struct {
		Name     string
		Resource []struct {
			Key   string
			Value struct{ Value any }
		}
	}
	require.NoError(t, json.NewDecoder(&out).Decode(&printed), out.String())
	assert.Equal(t, SpanChecks, printed.Name)
	service := ""
	for _, kv := range printed.Resource {
		if kv.Key == "service.name" {
			service, _ = kv.Value.Value.(string)
		}
	}
	assert.Equal(t, ServiceName, service)
}
