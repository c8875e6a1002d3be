package metrics

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lockstep-dev/lockstep/internal/certs"
)

// certificateExpiry serves when the webhook server's certificate expires,
// read from its file at every scrape: the file is what the webhook server
// serves (it reloads a renewed certificate), so the metric follows a
// renewal without a restart.
var certificateExpiry = &certificateCollector{desc: prometheus.NewDesc(
	prometheus.BuildFQName(namespace, "webhook", "certificate_expiry_timestamp_seconds"),
	"When the webhook server's serving certificate (tls.crt in LOCKSTEP_CERT_DIR) expires, in seconds since the epoch; "+
		"absent while the file cannot be read.",
	nil, nil)}

// ServeCertificateExpiry makes /metrics serve the expiry of the
// certificate in dir/tls.crt (the webhook server's).
func ServeCertificateExpiry(dir string) {
	certificateExpiry.set(filepath.Join(dir, certs.CertFile))
}

type certificateCollector struct {
	desc *prometheus.Desc
	mu   sync.Mutex
	path string
}

func (c *certificateCollector) set(path string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.path = path
}

// Describe implements prometheus.Collector.
func (c *certificateCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector: nothing while no file is set or
// it cannot be read (a scrape never fails for it).
func (c *certificateCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	path := c.path
	c.mu.Unlock()
	if path == "" {
		return
	}
	cert, err := readCertificate(path)
	if err != nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(cert.NotAfter.Unix()))
}

// readCertificate parses the first certificate of a PEM file: the serving
// certificate itself (a chain follows it).
func readCertificate(path string) (*x509.Certificate, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	for {
		var block *pem.Block
		block, raw = pem.Decode(raw)
		if block == nil {
			return nil, errors.New("no certificate in " + path)
		}
		if block.Type == "CERTIFICATE" {
			cert, err := x509.ParseCertificate(block.Bytes)
			if err != nil {
				return nil, fmt.Errorf("parsing the certificate in %s: %w", path, err)
			}
			return cert, nil
		}
	}
}
