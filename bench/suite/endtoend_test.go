package suite

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/lockstep-dev/lockstep/bench/env"
)

func TestWebhookCallsAndHandlerTimes(t *testing.T) {
	sample := func(name, label, value string, v float64) env.Sample {
		return env.Sample{Name: name, Labels: map[string]string{label: value}, Value: v}
	}
	const wh = "apiserver_admission_webhook_admission_duration_seconds"
	before := env.Metrics{sample(wh+"_count", "name", "a", 10), sample(wh+"_sum", "name", "a", 1), sample(wh+"_count", "name", "b", 5)}
	after := env.Metrics{sample(wh+"_count", "name", "a", 14), sample(wh+"_sum", "name", "a", 1.008), sample(wh+"_count", "name", "b", 5)}
	assert.Equal(t, "a 2.00 × 2.00 ms", webhookCalls(before, after, 2), "b gained no call")
	assert.Equal(t, "none", webhookCalls(after, after, 2))

	const hl = "controller_runtime_webhook_latency_seconds"
	after = env.Metrics{sample(hl+"_count", "webhook", "/validate", 2), sample(hl+"_sum", "webhook", "/validate", 0.001)}
	assert.Equal(t, "/validate 500 µs", handlerTimes(nil, after))
}
