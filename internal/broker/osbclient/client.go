package osbclient

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
	"github.com/lockstep-dev/lockstep/internal/tracing"
)

// ErrInvalidRequest is wrapped by errors for requests that were never sent
// because the caller left out a required field or gave malformed parameters.
var ErrInvalidRequest = errors.New("invalid broker request")

// Client talks to one OSB broker. It is safe for concurrent use.
type Client struct {
	base      *url.URL
	auth      Auth
	timeout   time.Duration
	maxBytes  int64
	userAgent string
	observe   func(Op, int, time.Duration)
	transport *http.Transport
	http      *http.Client
	now       func() time.Time
}

// New validates cfg and returns a client for the broker it describes.
func New(cfg Config) (*Client, error) {
	base, tlsConfig, err := cfg.validate()
	if err != nil {
		return nil, fmt.Errorf("invalid broker config: %w", err)
	}
	c := &Client{
		base:      base,
		auth:      cfg.Auth,
		timeout:   cfg.Timeout,
		maxBytes:  cfg.MaxResponseBytes,
		userAgent: cfg.UserAgent,
		observe:   cfg.Observe,
		now:       time.Now,
	}
	if c.timeout == 0 {
		c.timeout = DefaultTimeout
	}
	if c.maxBytes == 0 {
		c.maxBytes = DefaultMaxResponseBytes
	}
	if c.userAgent == "" {
		c.userAgent = "lockstep-osb-client"
	}
	transport, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		return nil, errors.New("invalid broker config: http.DefaultTransport is not an *http.Transport")
	}
	c.transport = transport.Clone()
	c.transport.TLSClientConfig = tlsConfig
	c.http = &http.Client{
		Transport: c.transport,
		// OSB has no redirects; following one could send credentials
		// elsewhere. A 3xx is reported as an unexpected status.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return c, nil
}

// URL returns the broker's base URL.
func (c *Client) URL() string { return c.base.String() }

// String describes the client without any credential.
func (c *Client) String() string {
	return fmt.Sprintf("OSB %s client for %s (%s)", osbapi.APIVersion, c.base, c.auth)
}

// Close releases idle connections. The client stays usable.
func (c *Client) Close() { c.transport.CloseIdleConnections() }

// call is one request to make.
type call struct {
	op     Op
	method string
	path   string // escaped, below the base URL: /v2/...
	query  url.Values
	body   any // sent as JSON when not nil
}

// answer is a complete response.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// do sends c and reads the whole answer. It returns a *TransportError when
// no complete answer came and a *MalformedResponseError when it was too
// large; the status is not interpreted.
func (c *Client) do(ctx context.Context, meta RequestMeta, cl call) (*answer, error) {
	var body io.Reader
	if cl.body != nil {
		raw, err := json.Marshal(cl.body)
		if err != nil {
			return nil, fmt.Errorf("%s: encode request body: %w", cl.op, err)
		}
		body = bytes.NewReader(raw)
	}
	target := c.base.String() + cl.path
	if len(cl.query) > 0 {
		target += "?" + cl.query.Encode()
	}

	ctx, span := c.span(ctx, cl)
	defer span.End()
	callCtx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	var connected, sent atomic.Bool
	traced := httptrace.WithClientTrace(callCtx, &httptrace.ClientTrace{
		ConnectDone: func(_, _ string, err error) {
			if err == nil {
				connected.Store(true)
			}
		},
		GotConn: func(httptrace.GotConnInfo) { connected.Store(true) },
		WroteRequest: func(info httptrace.WroteRequestInfo) {
			if info.Err == nil {
				sent.Store(true)
			}
		},
	})
	req, err := http.NewRequestWithContext(traced, cl.method, target, body)
	if err != nil {
		return nil, fmt.Errorf("%s: build request %s %s: %w", cl.op, cl.method, cl.path, err)
	}
	if err := meta.apply(req.Header); err != nil {
		return nil, fmt.Errorf("%s: %w", cl.op, err)
	}
	c.auth.apply(req.Header)
	tracing.Inject(ctx, req.Header)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}

	start := time.Now()
	resp, err := c.http.Do(req)
	if c.observe != nil {
		status := 0 // no answer
		if err == nil {
			status = resp.StatusCode
		}
		defer func() { c.observe(cl.op, status, time.Since(start)) }()
	}
	if err != nil {
		terr := c.transportError(ctx, callCtx, cl, err, connected.Load(), sent.Load())
		noAnswer(span, terr)
		return nil, terr
	}
	defer func() { _ = resp.Body.Close() }()
	answered(span, resp.StatusCode)
	if resp.ContentLength > c.maxBytes {
		return nil, c.tooLarge(cl, resp.StatusCode)
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, c.maxBytes+1))
	if err != nil {
		return nil, c.transportError(ctx, callCtx, cl, err, true, true)
	}
	if int64(len(raw)) > c.maxBytes {
		return nil, c.tooLarge(cl, resp.StatusCode)
	}
	return &answer{status: resp.StatusCode, header: resp.Header, body: raw}, nil
}

// span starts the span of one request (osb.<request>, a client span)
// with what it asks of whom: never its body, query or headers.
func (c *Client) span(ctx context.Context, cl call) (context.Context, trace.Span) {
	ctx, span := tracing.Start(ctx, tracing.OSB(string(cl.op)), trace.WithSpanKind(trace.SpanKindClient))
	if span.IsRecording() {
		attrs := []attribute.KeyValue{tracing.AttrRequest.String(string(cl.op)), tracing.AttrMethod.String(cl.method),
			tracing.AttrPath.String(c.base.Path + cl.path), tracing.AttrServer.String(c.base.Hostname())}
		if port, err := strconv.Atoi(c.base.Port()); err == nil {
			attrs = append(attrs, tracing.AttrPort.Int(port))
		}
		span.SetAttributes(attrs...)
	}
	return ctx, span
}

// answered records the status of an answer on its request's span; 5xx is
// an error of the request, 4xx the broker's answer.
func answered(span trace.Span, status int) {
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(tracing.AttrStatusCode.Int(status))
	if status >= 500 {
		span.SetStatus(codes.Error, http.StatusText(status))
	}
}

// noAnswer records a request that got no answer on its span: what kind
// of failure, never its message.
func noAnswer(span trace.Span, err error) {
	if !span.IsRecording() {
		return
	}
	kind := "connection"
	var te *TransportError
	if errors.As(err, &te) && te.Timeout {
		kind = "timeout"
	}
	span.SetAttributes(tracing.AttrErrorType.String(kind))
	span.SetStatus(codes.Error, "no answer: "+kind)
}

func (c *Client) tooLarge(cl call, status int) error {
	cause := &ResponseTooLargeError{Limit: c.maxBytes}
	return &MalformedResponseError{
		Op: cl.op, Method: cl.method, Path: cl.path, StatusCode: status,
		Reason: cause.Error(), Err: cause,
	}
}

func (c *Client) transportError(ctx, callCtx context.Context, cl call, err error, connected, sent bool) error {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		err = uerr.Err // url.Error repeats the whole URL
	}
	te := &TransportError{
		Op: cl.op, Method: cl.method, Path: cl.path,
		Connected: connected, RequestSent: sent, Err: err, timeout: c.timeout.String(),
	}
	var nerr net.Error
	switch {
	case ctx.Err() != nil:
		te.CallerDone = true
		te.Timeout = errors.Is(ctx.Err(), context.DeadlineExceeded)
		te.Err = ctx.Err()
	case errors.Is(callCtx.Err(), context.DeadlineExceeded):
		te.Timeout = true
		te.Err = context.DeadlineExceeded
	case errors.As(err, &nerr) && nerr.Timeout():
		te.Timeout = true
	}
	return te
}

// tlsHint suggests what to check for a TLS failure.
func tlsHint(err error) string {
	var (
		unknownAuthority x509.UnknownAuthorityError
		hostname         x509.HostnameError
		invalid          x509.CertificateInvalidError
		verification     *tls.CertificateVerificationError
		record           tls.RecordHeaderError
	)
	switch {
	case errors.As(err, &unknownAuthority), errors.As(err, &verification), errors.As(err, &invalid):
		return "check the broker's CA bundle and its certificate"
	case errors.As(err, &hostname):
		return "the broker's certificate does not name this host; check the URL and the certificate"
	case errors.As(err, &record), strings.Contains(err.Error(), "HTTP response to HTTPS client"):
		return "the broker does not seem to speak TLS; check the URL scheme"
	}
	return ""
}

// refusal turns an error status (4xx, 5xx) into an *HTTPError.
func refusal(cl call, a *answer) error {
	e := &HTTPError{Op: cl.op, Method: cl.method, Path: cl.path, StatusCode: a.status}
	if body, ok := parseErrorBody(a.body); ok {
		e.ErrorCode = body.code
		e.Description = body.description
		e.InstanceUsable = body.instanceUsable
		e.UpdateRepeatable = body.updateRepeatable
	} else if !cl.op.carriesCredentials() {
		// Not JSON (a proxy's error page, say): its start is the best
		// explanation there is.
		e.Description = snippet(a.body)
	}
	return e
}

// malformed reports an answer that cannot be understood.
func malformed(cl call, a *answer, reason string, cause error) error {
	m := &MalformedResponseError{
		Op: cl.op, Method: cl.method, Path: cl.path, StatusCode: a.status, Reason: reason, Err: cause,
	}
	if cl.op.carriesCredentials() {
		// The body, and even a JSON error about it, may quote credentials.
		m.Err = nil
	} else {
		m.Snippet = snippet(a.body)
	}
	return m
}

// unexpected reports a status the OSB spec does not allow for cl; error
// statuses become an *HTTPError.
func unexpected(cl call, a *answer) error {
	if a.status >= 400 {
		return refusal(cl, a)
	}
	return malformed(cl, a, fmt.Sprintf("unexpected status %d %s for %s", a.status, http.StatusText(a.status), cl.op), nil)
}

// decode reads a's JSON body into v. An empty body leaves v untouched.
func decode(cl call, a *answer, v any) error {
	if len(bytes.TrimSpace(a.body)) == 0 {
		return nil
	}
	if err := json.Unmarshal(a.body, v); err != nil {
		reason := "invalid JSON"
		if !cl.op.carriesCredentials() {
			reason += ": " + err.Error()
		}
		return malformed(cl, a, reason, err)
	}
	return nil
}

// instancePath returns the escaped path of an instance.
func instancePath(instanceID string) string {
	return "/v2/service_instances/" + url.PathEscape(instanceID)
}

// bindingPath returns the escaped path of a binding.
func bindingPath(instanceID, bindingID string) string {
	return instancePath(instanceID) + "/service_bindings/" + url.PathEscape(bindingID)
}

// query builds a query from name/value pairs, leaving out empty values.
func query(pairs ...string) url.Values {
	q := url.Values{}
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] != "" {
			q.Set(pairs[i], pairs[i+1])
		}
	}
	return q
}

// required returns an ErrInvalidRequest error naming the first empty field.
func required(op Op, fields ...string) error {
	for i := 0; i+1 < len(fields); i += 2 {
		if strings.TrimSpace(fields[i+1]) == "" {
			return fmt.Errorf("%w: %s needs %s, which is empty", ErrInvalidRequest, op, fields[i])
		}
	}
	return nil
}

// checkParameters returns p when it is a JSON object, nil when it is empty
// or null, and an error otherwise.
func checkParameters(op Op, p json.RawMessage) (json.RawMessage, error) {
	trimmed := bytes.TrimSpace(p)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return nil, nil
	}
	if trimmed[0] != '{' || !json.Valid(trimmed) {
		return nil, fmt.Errorf("%w: %s parameters must be a JSON object", ErrInvalidRequest, op)
	}
	return trimmed, nil
}
