package certs

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// File names written by Write, as controller-runtime's webhook server
// expects them (tls.crt, tls.key) plus the CA.
const (
	CACertFile = "ca.crt"
	CAKeyFile  = "ca.key"
	CertFile   = "tls.crt"
	KeyFile    = "tls.key"
)

// Bundle is a CA and a serving certificate signed by it, PEM encoded.
type Bundle struct {
	CACert, CAKey, Cert, Key []byte
}

// Generate makes a new CA and a serving certificate valid for the given DNS
// names and IP addresses, for validity from now.
func Generate(hosts []string, validity time.Duration) (*Bundle, error) {
	if len(hosts) == 0 {
		return nil, errors.New("certs: no host names or IP addresses given for the serving certificate")
	}
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("certs: generating the CA key: %w", err)
	}
	caTemplate := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "lockstep local CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("certs: signing the CA certificate: %w", err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, fmt.Errorf("certs: reading back the CA certificate: %w", err)
	}

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("certs: generating the serving key: %w", err)
	}
	template := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: hosts[0]},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(validity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			template.IPAddresses = append(template.IPAddresses, ip)
		} else {
			template.DNSNames = append(template.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, template, caCert, &key.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("certs: signing the serving certificate: %w", err)
	}
	caKeyDER, err := x509.MarshalECPrivateKey(caKey)
	if err != nil {
		return nil, fmt.Errorf("certs: encoding the CA key: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("certs: encoding the serving key: %w", err)
	}
	return &Bundle{
		CACert: pemBlock("CERTIFICATE", caDER),
		CAKey:  pemBlock("EC PRIVATE KEY", caKeyDER),
		Cert:   pemBlock("CERTIFICATE", der),
		Key:    pemBlock("EC PRIVATE KEY", keyDER),
	}, nil
}

// Write stores the bundle in dir (created if missing); keys are readable by
// the owner only. Files are replaced atomically so that a server watching
// the directory never reads half a certificate.
func (b *Bundle) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("certs: creating %s: %w", dir, err)
	}
	files := []struct {
		name string
		data []byte
		mode os.FileMode
	}{
		{CACertFile, b.CACert, 0o644},
		{CAKeyFile, b.CAKey, 0o600},
		{KeyFile, b.Key, 0o600},
		{CertFile, b.Cert, 0o644},
	}
	for _, f := range files {
		tmp := filepath.Join(dir, "."+f.name+".tmp")
		if err := os.WriteFile(tmp, f.data, f.mode); err != nil {
			return fmt.Errorf("certs: writing %s: %w", tmp, err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, f.name)); err != nil {
			return fmt.Errorf("certs: replacing %s: %w", f.name, err)
		}
	}
	return nil
}

// Valid reports whether dir holds a serving certificate, signed by the CA
// next to it, that covers every host and stays valid for at least minLeft.
func Valid(dir string, hosts []string, minLeft time.Duration) bool {
	caPEM, err1 := os.ReadFile(filepath.Join(dir, CACertFile))
	certPEM, err2 := os.ReadFile(filepath.Join(dir, CertFile))
	_, err3 := os.Stat(filepath.Join(dir, KeyFile))
	if err1 != nil || err2 != nil || err3 != nil {
		return false
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return false
	}
	block, _ := pem.Decode(certPEM)
	if block == nil {
		return false
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil || time.Until(cert.NotAfter) < minLeft {
		return false
	}
	for _, h := range hosts {
		if _, err := cert.Verify(x509.VerifyOptions{DNSName: h, Roots: pool}); err != nil {
			return false
		}
	}
	return true
}

func pemBlock(typ string, der []byte) []byte {
	var buf bytes.Buffer
	_ = pem.Encode(&buf, &pem.Block{Type: typ, Bytes: der})
	return buf.Bytes()
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return big.NewInt(time.Now().UnixNano())
	}
	return n
}
