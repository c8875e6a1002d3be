package loadgen

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
)

// ReviewClient posts AdmissionReviews to a webhook server over TLS, as the
// API server does: HTTP/2 when the server offers it, one client for all
// workers, the server's certificate verified against a CA.
type ReviewClient struct {
	http *http.Client
}

// NewReviewClient returns a client that trusts the PEM certificates in ca.
func NewReviewClient(ca []byte, timeout time.Duration) (*ReviewClient, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("review client: the CA bundle holds no PEM certificate")
	}
	transport := &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2:   true,
		MaxIdleConnsPerHost: 128,
		IdleConnTimeout:     time.Minute,
	}
	return &ReviewClient{http: &http.Client{Transport: transport, Timeout: timeout}}, nil
}

// Close drops the client's idle connections.
func (c *ReviewClient) Close() { c.http.CloseIdleConnections() }

// Post sends one AdmissionReview and returns the webhook's response.
func (c *ReviewClient) Post(ctx context.Context, url string, body []byte) (*admissionv1.AdmissionResponse, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("building the request to %s: %w", url, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("posting an AdmissionReview to %s: %w", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("reading the answer of %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s answered HTTP %d: %.200s", url, resp.StatusCode, raw)
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(raw, &review); err != nil {
		return nil, fmt.Errorf("%s answered something that is not an AdmissionReview: %w", url, err)
	}
	if review.Response == nil {
		return nil, fmt.Errorf("%s answered an AdmissionReview without a response", url)
	}
	return review.Response, nil
}

// Expect is the answer a request should get.
type Expect struct {
	// Allowed is whether the webhook should allow the request.
	Allowed bool
	// Code is the HTTP code of a rejection; zero accepts any.
	Code int32
}

// Check reports how resp differs from e.
func (e Expect) Check(resp *admissionv1.AdmissionResponse) error {
	var code int32
	msg := ""
	if resp.Result != nil {
		code, msg = resp.Result.Code, resp.Result.Message
	}
	if resp.Allowed != e.Allowed {
		if resp.Allowed {
			return fmt.Errorf("allowed, expected a rejection")
		}
		return fmt.Errorf("rejected (HTTP %d: %.300s), expected it allowed", code, msg)
	}
	if !e.Allowed && e.Code != 0 && code != e.Code {
		return fmt.Errorf("rejected with HTTP %d (%.300s), expected HTTP %d", code, msg, e.Code)
	}
	return nil
}

// Reviews returns a Do that posts the AdmissionReview body(i) to url and
// checks its answer against want. body is called inside the timed request:
// it should return bytes encoded beforehand.
func (c *ReviewClient) Reviews(url string, body func(i int) []byte, want Expect) Do {
	return func(ctx context.Context, i int) error {
		resp, err := c.Post(ctx, url, body(i))
		if err != nil {
			return err
		}
		return want.Check(resp)
	}
}
