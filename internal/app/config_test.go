package app

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLoadConfigDefaults(t *testing.T) {
	c, err := LoadConfig()
	require.NoError(t, err)
	assert.Equal(t, 9443, c.WebhookPort)
	assert.Equal(t, "certs", c.CertDir)
	assert.Equal(t, 25*time.Second, c.AdmissionBudget)
	assert.Equal(t, ":8443", c.MetricsAddr)
	assert.True(t, c.MetricsSecure, "metrics over HTTPS to authorized clients")
	assert.False(t, c.EnableHTTP2)
	assert.Equal(t, "1.2", c.TLSMinVersion)
}

func TestLoadConfigFromEnvironment(t *testing.T) {
	t.Setenv("LOCKSTEP_WEBHOOK_PORT", "10443")
	t.Setenv("LOCKSTEP_ADMISSION_BUDGET", "3s")
	c, err := LoadConfig()
	require.NoError(t, err)
	assert.Equal(t, 10443, c.WebhookPort)
	assert.Equal(t, 3*time.Second, c.AdmissionBudget)
}

func TestLoadConfigRejects(t *testing.T) {
	tests := []struct {
		env, value, message string
	}{
		{"LOCKSTEP_WEBHOOK_PORT", "70000", "LOCKSTEP_WEBHOOK_PORT=70000"},
		{"LOCKSTEP_WEBHOOK_PORT", "abc", "LOCKSTEP_* environment variables"},
		{"LOCKSTEP_ADMISSION_BUDGET", "31s", "less than the webhook timeout"},
		{"LOCKSTEP_LOG_LEVEL", "loud", "debug, info or error"},
		{"LOCKSTEP_LOG_FORMAT", "xml", "json or console"},
		{"LOCKSTEP_CERT_DIR", "", "LOCKSTEP_CERT_DIR is empty"},
		{"LOCKSTEP_MAX_PARAMETERS_BYTES", "0", "LOCKSTEP_MAX_PARAMETERS_BYTES=0: must be more than 0"},
		{"LOCKSTEP_TLS_MIN_VERSION", "1.1", `LOCKSTEP_TLS_MIN_VERSION="1.1": must be 1.2 or 1.3`},
		{"LOCKSTEP_ENABLE_HTTP2", "maybe", "LOCKSTEP_* environment variables"},
	}
	for _, tt := range tests {
		t.Run(tt.env+"="+tt.value, func(t *testing.T) {
			t.Setenv(tt.env, tt.value)
			_, err := LoadConfig()
			assert.ErrorContains(t, err, tt.message)
		})
	}
}
