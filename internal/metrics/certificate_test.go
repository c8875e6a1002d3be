package metrics

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/internal/certs"
)

// registryOf is a registry with only c on it.
func registryOf(t *testing.T, c prometheus.Collector) *prometheus.Registry {
	t.Helper()
	r := prometheus.NewPedanticRegistry()
	require.NoError(t, r.Register(c))
	return r
}

func TestCertificateExpiryFollowsTheFile(t *testing.T) {
	const name = "lockstep_webhook_certificate_expiry_timestamp_seconds"
	dir := t.TempDir()
	c := &certificateCollector{desc: certificateExpiry.desc}
	served := func() int {
		n, err := testutil.GatherAndCount(registryOf(t, c), name)
		require.NoError(t, err, "a scrape never fails for the certificate")
		return n
	}

	assert.Zero(t, served(), "no directory set: nothing served")
	c.set(filepath.Join(dir, certs.CertFile))
	assert.Zero(t, served(), "no file yet: nothing served")

	for _, validity := range []time.Duration{90 * 24 * time.Hour, 24 * time.Hour} {
		b, err := certs.Generate([]string{"lockstep-webhook.lockstep-system.svc"}, validity)
		require.NoError(t, err)
		require.NoError(t, b.Write(dir))
		assert.InDelta(t, float64(time.Now().Add(validity).Unix()), testutil.ToFloat64(c), 120,
			"the certificate in the directory now, renewed or not, without a restart")
	}

	require.NoError(t, os.WriteFile(filepath.Join(dir, certs.CertFile), []byte("not PEM"), 0o600))
	assert.Zero(t, served(), "a file that holds no certificate: nothing served")
}
