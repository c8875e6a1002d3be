package fakebroker

import (
	"crypto/tls"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/internal/broker/osbapi"
	"github.com/lockstep-dev/lockstep/internal/broker/osbclient"
)

// Broker is a scriptable OSB broker served over HTTP on 127.0.0.1.
type Broker struct {
	srv       *httptest.Server
	auth      osbclient.Auth
	done      chan struct{}
	closeOnce sync.Once

	mu         sync.Mutex
	catalog    osbapi.Catalog
	latency    time.Duration
	scripts    map[scriptKey][]Respond
	always     map[Op]Respond
	responder  Responder
	marker     string // begins every password
	instances  map[string]Instance
	bindings   map[bindingKey]Binding
	creations  map[bindingKey]int // by target; bindingID "" for an instance
	operations map[string]*operation
	latestOp   map[bindingKey]*operation // by target; bindingID "" for an instance
	opSeq      int
	calls      []*Call
	inFlight   int // requests being handled
	// perInstance and maxPerInstance count concurrent state changes.
	perInstance    map[string]int
	maxPerInstance map[string]int
	changed        chan struct{} // closed and replaced whenever calls or inFlight change
}

// Option configures a Broker.
type Option func(*settings)

type settings struct {
	auth    osbclient.Auth
	tls     bool
	catalog *osbapi.Catalog
	latency time.Duration
	marker  string
}

// WithBasicAuth makes the broker require HTTP basic auth.
func WithBasicAuth(username, password string) Option {
	return func(s *settings) { s.auth = osbclient.BasicAuth(username, password) }
}

// WithBearerToken makes the broker require a bearer token.
func WithBearerToken(token string) Option {
	return func(s *settings) { s.auth = osbclient.BearerAuth(token) }
}

// WithTLS serves https with a self-signed certificate; see CABundle.
func WithTLS() Option { return func(s *settings) { s.tls = true } }

// WithCatalog replaces the default catalog.
func WithCatalog(c osbapi.Catalog) Option { return func(s *settings) { s.catalog = &c } }

// WithLatency delays every request; see SetLatency.
func WithLatency(d time.Duration) Option { return func(s *settings) { s.latency = d } }

// WithCredentialMarker begins the password of every binding's credentials
// with marker, so that a test can look for credentials where they must
// never be (logs, events, status).
func WithCredentialMarker(marker string) Option { return func(s *settings) { s.marker = marker } }

// New starts a broker that is closed when the test ends. It fails the test
// when the broker cannot start.
func New(t testing.TB, opts ...Option) *Broker {
	t.Helper()
	b, err := Start(opts...)
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(b.Close)
	return b
}

// Start starts a broker outside of a test (a benchmark harness, a
// standalone fake); the caller must Close it.
func Start(opts ...Option) (*Broker, error) {
	var s settings
	for _, o := range opts {
		o(&s)
	}
	b := &Broker{
		auth:    s.auth,
		done:    make(chan struct{}),
		changed: make(chan struct{}),
		catalog: DefaultCatalog(),

		perInstance:    map[string]int{},
		maxPerInstance: map[string]int{},
	}
	if s.catalog != nil {
		c, err := cloneCatalog(*s.catalog)
		if err != nil {
			return nil, fmt.Errorf("fakebroker: catalog cannot be encoded: %w", err)
		}
		b.catalog = c
	}
	b.Reset()
	b.ResetState()
	b.latency = s.latency
	b.marker = s.marker
	b.srv = httptest.NewUnstartedServer(b.routes())
	// Handshake failures are expected in TLS tests; keep them off stderr.
	b.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	if s.tls {
		cert, err := selfSignedCertificate()
		if err != nil {
			return nil, fmt.Errorf("fakebroker: %w", err)
		}
		b.srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		b.srv.StartTLS()
	} else {
		b.srv.Start()
	}
	return b, nil
}

// Close releases every hanging request and stops the server. It is safe to
// call more than once.
func (b *Broker) Close() {
	b.closeOnce.Do(func() {
		close(b.done)
		b.srv.Close()
	})
}

// URL returns the broker's base URL.
func (b *Broker) URL() string { return b.srv.URL }

// CABundle returns the PEM certificate of a broker started WithTLS, nil
// otherwise.
func (b *Broker) CABundle() []byte {
	cert := b.srv.Certificate()
	if cert == nil {
		return nil
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})
}

// Config returns a client config that reaches this broker: URL, auth and CA
// bundle, with a short timeout suited to tests.
func (b *Broker) Config() osbclient.Config {
	return osbclient.Config{URL: b.URL(), Auth: b.auth, CABundle: b.CABundle(), Timeout: 5 * time.Second}
}

// SetCatalog replaces the catalog the broker serves and checks against.
func (b *Broker) SetCatalog(c osbapi.Catalog) error {
	clone, err := cloneCatalog(c)
	if err != nil {
		return fmt.Errorf("fakebroker: catalog cannot be encoded: %w", err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.catalog = clone
	return nil
}

// Catalog returns a copy of the catalog the broker serves.
func (b *Broker) Catalog() osbapi.Catalog {
	b.mu.Lock()
	defer b.mu.Unlock()
	c, err := cloneCatalog(b.catalog)
	if err != nil {
		return osbapi.Catalog{}
	}
	return c
}

// routes maps the OSB API onto handlers.
func (b *Broker) routes() http.Handler {
	mux := http.NewServeMux()
	const inst = "/v2/service_instances/{instance_id}"
	const bind = inst + "/service_bindings/{binding_id}"
	for pattern, op := range map[string]Op{
		"GET /v2/catalog":                 OpCatalog,
		"PUT " + inst:                     OpProvision,
		"PATCH " + inst:                   OpUpdate,
		"DELETE " + inst:                  OpDeprovision,
		"GET " + inst:                     OpGetInstance,
		"GET " + inst + "/last_operation": OpInstanceLastOperation,
		"PUT " + bind:                     OpBind,
		"DELETE " + bind:                  OpUnbind,
		"GET " + bind:                     OpGetBinding,
		"GET " + bind + "/last_operation": OpBindingLastOperation,
		"/":                               OpUnknown,
	} {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) { b.serve(op, w, r) })
	}
	return mux
}
