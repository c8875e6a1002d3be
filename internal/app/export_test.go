package app

// What the external tests of the package reach.
var (
	WebhookOptions = webhookOptions
	MetricsOptions = metricsOptions
)
