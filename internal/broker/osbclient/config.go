package osbclient

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Defaults applied by New when a Config leaves a field at its zero value.
const (
	DefaultTimeout          = 30 * time.Second
	DefaultMaxResponseBytes = 4 << 20 // 4 MiB: room for a catalog with many schemas.
)

// Config describes how to reach one broker.
type Config struct {
	// URL is the broker's base URL (http or https), for example
	// "https://broker.example.com" or "https://host/some/prefix". The OSB
	// paths (/v2/...) are appended to it. It must not carry credentials; put
	// them in Auth. With Auth it must be https, or http to a loopback
	// address: credentials never cross a network in plain text.
	URL string
	// Auth is how the client authenticates to the broker.
	Auth Auth
	// CABundle, when set, is the PEM bundle of the only certificate
	// authorities trusted for the broker's TLS certificate (the system pool
	// is not used). Only valid with an https URL.
	CABundle []byte
	// Timeout bounds every single request, in addition to the caller's
	// context. Zero means DefaultTimeout.
	Timeout time.Duration
	// MaxResponseBytes caps the size of a response body; a larger answer is
	// an error, never read into memory. Zero means DefaultMaxResponseBytes.
	MaxResponseBytes int64
	// UserAgent is sent as the User-Agent header. Empty means
	// "lockstep-osb-client".
	UserAgent string
	// Observe, when set, is called after every request with its Op, the
	// HTTP status of the answer (0 when none came) and how long it took
	// (lockstep's metrics; this package knows nothing of them).
	Observe func(op Op, status int, elapsed time.Duration)
}

// String describes the config without any credential.
func (c Config) String() string {
	return fmt.Sprintf("broker %s (%s, CA bundle %s, timeout %s, max response %d bytes)",
		redactURL(c.URL), c.Auth, caBundleSummary(c.CABundle), c.Timeout, c.MaxResponseBytes)
}

// GoString is String, so that %#v does not print credentials either.
func (c Config) GoString() string { return c.String() }

func caBundleSummary(b []byte) string {
	if len(b) == 0 {
		return "not set"
	}
	return "set"
}

// Auth is how the client authenticates to the broker: HTTP basic auth when
// Username or Password is set, a bearer token when Token is set, nothing when
// all are empty. Setting both kinds is an error reported by New.
type Auth struct {
	Username string
	Password string
	Token    string
}

// BasicAuth returns an Auth for HTTP basic authentication.
func BasicAuth(username, password string) Auth {
	return Auth{Username: username, Password: password}
}

// BearerAuth returns an Auth for a bearer token.
func BearerAuth(token string) Auth { return Auth{Token: token} }

// AuthKind names the kind of authentication an Auth describes.
type AuthKind string

// The kinds of Auth.
const (
	AuthNone   AuthKind = "none"
	AuthBasic  AuthKind = "basic"
	AuthBearer AuthKind = "bearer"
)

// Kind reports which kind of authentication a is. A mix of basic and bearer
// fields reports AuthBasic; validate rejects it.
func (a Auth) Kind() AuthKind {
	switch {
	case a.Username != "" || a.Password != "":
		return AuthBasic
	case a.Token != "":
		return AuthBearer
	default:
		return AuthNone
	}
}

// String names the kind of authentication and never shows a credential.
func (a Auth) String() string {
	switch a.Kind() {
	case AuthBasic:
		return "basic auth"
	case AuthBearer:
		return "bearer token"
	default:
		return "no auth"
	}
}

// GoString is String, so that %#v does not print credentials either.
func (a Auth) GoString() string { return a.String() }

func (a Auth) validate() error {
	basic := a.Username != "" || a.Password != ""
	switch {
	case basic && a.Token != "":
		return errors.New("auth has both basic credentials and a bearer token; set only one")
	case basic && a.Username == "":
		return errors.New("basic auth has a password but no username; set both")
	case basic && a.Password == "":
		return errors.New("basic auth has a username but no password; set both")
	case basic && strings.Contains(a.Username, ":"):
		return errors.New("basic auth username contains ':', which HTTP basic auth cannot carry")
	}
	return nil
}

func (a Auth) apply(h http.Header) {
	switch a.Kind() {
	case AuthBasic:
		r := http.Request{Header: h}
		r.SetBasicAuth(a.Username, a.Password)
	case AuthBearer:
		h.Set("Authorization", "Bearer "+a.Token)
	}
}

// validate checks c and returns its base URL (without a trailing slash) and
// the TLS configuration to use.
func (c Config) validate() (*url.URL, *tls.Config, error) {
	if strings.TrimSpace(c.URL) == "" {
		return nil, nil, errors.New("broker URL is empty; set it to the broker's http(s) base URL")
	}
	u, err := url.Parse(c.URL)
	if err != nil {
		// url.Parse quotes the input, which may hold credentials: keep only
		// the reason.
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return nil, nil, fmt.Errorf("broker URL cannot be parsed: %w", err)
	}
	switch u.Scheme {
	case "http", "https":
	default:
		return nil, nil, fmt.Errorf("broker URL %s has scheme %q; use http or https", redactURL(c.URL), u.Scheme)
	}
	if u.Host == "" {
		return nil, nil, fmt.Errorf("broker URL %s has no host", redactURL(c.URL))
	}
	if u.User != nil {
		return nil, nil, errors.New("broker URL carries credentials; remove them from the URL and set Auth instead")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, nil, fmt.Errorf("broker URL %s has a query or fragment; give only scheme, host and path", redactURL(c.URL))
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	if err := c.Auth.validate(); err != nil {
		return nil, nil, fmt.Errorf("broker auth: %w", err)
	}
	if c.Auth.Kind() != AuthNone && u.Scheme == "http" && !Loopback(u.Hostname()) {
		return nil, nil, fmt.Errorf("broker URL %s is plain http: lockstep sends credentials (%s) only over https, or to a loopback address; give the broker an https URL",
			redactURL(c.URL), c.Auth)
	}
	if c.Timeout < 0 {
		return nil, nil, fmt.Errorf("broker timeout %s is negative; use a positive duration or 0 for the default", c.Timeout)
	}
	if c.MaxResponseBytes < 0 {
		return nil, nil, fmt.Errorf("broker max response size %d is negative; use a positive size or 0 for the default", c.MaxResponseBytes)
	}
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	if len(c.CABundle) > 0 {
		if u.Scheme != "https" {
			return nil, nil, fmt.Errorf("broker CA bundle is set but URL %s is not https; use https or drop the CA bundle", redactURL(c.URL))
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(c.CABundle) {
			return nil, nil, errors.New("broker CA bundle holds no PEM certificate; give the PEM-encoded CA certificate(s)")
		}
		tlsConfig.RootCAs = pool
	}
	return u, tlsConfig, nil
}

// Loopback reports whether host (a URL's host, without port) is this
// machine: localhost, 127.0.0.0/8 or ::1. Plain http to it never leaves
// the machine (or the pod).
func Loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// redactURL returns raw without any user info, for messages.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	if u.User != nil {
		u.User = nil
		return u.String() + " (credentials removed)"
	}
	return u.String()
}
