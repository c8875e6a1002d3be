package osbclient_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/broker/osbclient"
)

func TestHeaders(t *testing.T) {
	tests := []struct {
		name         string
		meta         osbclient.RequestMeta
		wantIdentity map[string]any // nil: header absent
		wantReqID    string
	}{
		{
			name: "identity and request id",
			meta: meta,
			wantIdentity: map[string]any{
				"username": "alice", "uid": "uid-1", "groups": []any{"dev", "system:authenticated"},
				"extra": map[string]any{"scopes": []any{"a", "b"}},
			},
			wantReqID: "op-123",
		},
		{
			name:         "identity with only a username has empty groups and extra",
			meta:         osbclient.RequestMeta{Identity: osbclient.Identity{Username: "system:serviceaccount:ns:sa"}},
			wantIdentity: map[string]any{"username": "system:serviceaccount:ns:sa", "uid": "", "groups": []any{}, "extra": map[string]any{}},
		},
		{name: "no identity, no request id: both headers left out"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := fakebroker.New(t)
			c := newClient(t, b)
			_, err := c.Catalog(testCtx(t), tt.meta)
			require.NoError(t, err)
			call, _ := b.LastCall(fakebroker.OpCatalog)
			assert.Equal(t, "2.17", call.Header.Get("X-Broker-API-Version"))
			assert.Equal(t, "application/json", call.Header.Get("Accept"))
			assert.Equal(t, "lockstep-osb-client", call.Header.Get("User-Agent"))

			if tt.wantIdentity == nil {
				assert.NotContains(t, call.Header, "X-Broker-Api-Originating-Identity")
			} else {
				platform, encoded, ok := strings.Cut(call.Header.Get("X-Broker-API-Originating-Identity"), " ")
				require.True(t, ok)
				assert.Equal(t, "kubernetes", platform)
				raw, err := base64.StdEncoding.DecodeString(encoded)
				require.NoError(t, err)
				var got map[string]any
				require.NoError(t, json.Unmarshal(raw, &got))
				assert.Equal(t, tt.wantIdentity, got)
			}
			if tt.wantReqID == "" {
				assert.NotContains(t, call.Header, "X-Broker-Api-Request-Identity")
			} else {
				assert.Equal(t, tt.wantReqID, call.Header.Get("X-Broker-API-Request-Identity"))
			}
		})
	}
}

func TestAuth(t *testing.T) {
	tests := []struct {
		name       string
		opts       []fakebroker.Option
		clientAuth osbclient.Auth
		wantHeader string
		wantErr    errCheck
	}{
		{
			name:       "basic",
			opts:       []fakebroker.Option{fakebroker.WithBasicAuth("broker-user", "broker-pass")},
			clientAuth: osbclient.BasicAuth("broker-user", "broker-pass"),
			wantHeader: "Basic " + base64.StdEncoding.EncodeToString([]byte("broker-user:broker-pass")),
		},
		{
			name:       "bearer",
			opts:       []fakebroker.Option{fakebroker.WithBearerToken("tok-123")},
			clientAuth: osbclient.BearerAuth("tok-123"),
			wantHeader: "Bearer tok-123",
		},
		{
			name: "none",
		},
		{
			name:       "wrong password",
			opts:       []fakebroker.Option{fakebroker.WithBasicAuth("broker-user", "broker-pass")},
			clientAuth: osbclient.BasicAuth("broker-user", "nope"),
			wantHeader: "Basic " + base64.StdEncoding.EncodeToString([]byte("broker-user:nope")),
			wantErr:    errCheck{is: isHTTPStatus(401), msg: []string{`broker answered 401: "missing or wrong credentials" (GET /v2/catalog)`}},
		},
		{
			name:    "missing token",
			opts:    []fakebroker.Option{fakebroker.WithBearerToken("tok-123")},
			wantErr: errCheck{is: isHTTPStatus(401)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := fakebroker.New(t, tt.opts...)
			c := newClient(t, b, func(cfg *osbclient.Config) { cfg.Auth = tt.clientAuth })
			_, err := c.Catalog(testCtx(t), meta)
			tt.wantErr.check(t, err)
			if err != nil {
				assert.NotContains(t, err.Error(), "nope")
			}
			call, _ := b.LastCall(fakebroker.OpCatalog)
			assert.Equal(t, tt.wantHeader, call.Header.Get("Authorization"))
		})
	}
}

func TestResponseSizeCap(t *testing.T) {
	tests := []struct {
		name string
		size int
	}{
		{"announced by Content-Length", 1500},
		{"streamed without Content-Length", 100000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := fakebroker.New(t)
			body := `{"services": [], "pad": "` + strings.Repeat("x", tt.size) + `"}`
			b.Script(fakebroker.OpCatalog, fakebroker.Respond{Status: 200, Body: body})
			c := newClient(t, b, func(cfg *osbclient.Config) { cfg.MaxResponseBytes = 1000 })
			_, err := c.Catalog(testCtx(t), meta)
			require.Error(t, err)
			assert.True(t, osbclient.IsResponseTooLarge(err))
			assert.True(t, osbclient.IsMalformed(err))
			assert.Contains(t, err.Error(), "broker response larger than 1000 bytes")
			assert.NotContains(t, err.Error(), "xxxx", "the body is not quoted")
		})
	}

	t.Run("exactly at the cap is fine", func(t *testing.T) {
		b := fakebroker.New(t)
		body := `{"services": []}`
		b.Script(fakebroker.OpCatalog, fakebroker.Respond{Status: 200, Body: body})
		c := newClient(t, b, func(cfg *osbclient.Config) { cfg.MaxResponseBytes = int64(len(body)) })
		_, err := c.Catalog(testCtx(t), meta)
		require.NoError(t, err)
	})
}

func TestCallerDeadline(t *testing.T) {
	b := fakebroker.New(t)
	b.Script(fakebroker.OpProvision, fakebroker.Respond{Hang: true})
	c := newClient(t, b) // per-request timeout 5s: the caller's deadline comes first
	ctx, cancel := context.WithTimeout(testCtx(t), 50*time.Millisecond)
	defer cancel()
	_, err := c.Provision(ctx, meta, provisionReq("i1"))
	require.Error(t, err)
	var te *osbclient.TransportError
	require.ErrorAs(t, err, &te)
	assert.True(t, te.CallerDone)
	assert.True(t, te.Timeout)
	assert.True(t, te.RequestSent)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), "broker did not answer (PUT /v2/service_instances/i1): the request reached it; gave up waiting")
	assert.False(t, osbclient.Retryable(err), "the caller's own deadline is not worth a retry")
	assert.True(t, osbclient.NeedsOrphanMitigation(err))
}

func TestConnectionRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())

	c, err := osbclient.New(osbclient.Config{URL: "http://" + addr, Auth: osbclient.BasicAuth("u", "pass-word")})
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Provision(testCtx(t), meta, provisionReq("i1"))
	errCheck{
		is:        osbclient.IsTransport,
		msg:       []string{"broker could not be reached (PUT /v2/service_instances/i1): ", "connection refused"},
		retryable: true,
		orphan:    false, // the request never left
	}.check(t, err)
	assert.False(t, osbclient.IsTimeout(err))
	assert.NotContains(t, err.Error(), "pass-word")
}

func TestTLS(t *testing.T) {
	b := fakebroker.New(t, fakebroker.WithTLS(), fakebroker.WithBasicAuth("u", "p"))
	other := fakebroker.New(t, fakebroker.WithTLS())
	require.True(t, strings.HasPrefix(b.URL(), "https://"))

	tests := []struct {
		name     string
		caBundle []byte
		wantErr  errCheck
	}{
		{name: "the broker's CA bundle is trusted", caBundle: b.CABundle()},
		{
			name:     "another CA is not",
			caBundle: other.CABundle(),
			wantErr:  errCheck{is: osbclient.IsTransport, msg: []string{"certificate", "check the broker's CA bundle"}, retryable: true},
		},
		{
			name:    "without a CA bundle the system pool does not know the test CA",
			wantErr: errCheck{is: osbclient.IsTransport, msg: []string{"certificate", "check the broker's CA bundle"}, retryable: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(t, b, func(cfg *osbclient.Config) { cfg.CABundle = tt.caBundle })
			_, err := c.Catalog(testCtx(t), meta)
			tt.wantErr.check(t, err)
		})
	}

	t.Run("plain http to a TLS broker", func(t *testing.T) {
		c := newClient(t, b, func(cfg *osbclient.Config) {
			cfg.URL = strings.Replace(b.URL(), "https://", "http://", 1)
			cfg.CABundle = nil
		})
		_, err := c.Catalog(testCtx(t), meta)
		// Go's TLS server answers a plain request with a 400.
		require.True(t, isHTTPStatus(http.StatusBadRequest)(err), "got %v", err)
	})
}

func TestTLSToPlainBroker(t *testing.T) {
	b := fakebroker.New(t)
	c := newClient(t, b, func(cfg *osbclient.Config) { cfg.URL = strings.Replace(b.URL(), "http://", "https://", 1) })
	_, err := c.Catalog(testCtx(t), meta)
	errCheck{is: osbclient.IsTransport, msg: []string{"the broker does not seem to speak TLS; check the URL scheme"}, retryable: true}.check(t, err)
}

func TestRequestToUnknownPath(t *testing.T) {
	b := fakebroker.New(t)
	c := newClient(t, b, func(cfg *osbclient.Config) { cfg.URL = b.URL() + "/not-a-broker" })
	_, err := c.Catalog(testCtx(t), meta)
	require.True(t, osbclient.IsNotFound(err), "got %v", err)
	assert.Contains(t, err.Error(), "(GET /v2/catalog)")
	call, _ := b.LastCall(fakebroker.OpUnknown)
	assert.Equal(t, "/not-a-broker/v2/catalog", call.Path, "the URL path is a prefix")
}

func TestClientString(t *testing.T) {
	b := fakebroker.New(t, fakebroker.WithBearerToken("super-token"))
	c := newClient(t, b)
	assert.Equal(t, "OSB 2.17 client for "+b.URL()+" (bearer token)", c.String())
	assert.Equal(t, b.URL(), c.URL())
}

// TestConnectionAcceptedButNoHandshake: a broker that accepts the
// connection and then says nothing (here: never answers the TLS handshake)
// was reached; the message says so instead of "could not be reached".
func TestConnectionAcceptedButNoHandshake(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			defer conn.Close() // held open, silent, until the test ends
		}
	}()

	c, err := osbclient.New(osbclient.Config{URL: "https://" + l.Addr().String(), Timeout: 100 * time.Millisecond})
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Provision(testCtx(t), meta, provisionReq("i1"))
	errCheck{
		is:        osbclient.IsTransport,
		msg:       []string{"broker accepted the connection but did not take the request (PUT /v2/service_instances/i1): no answer within 100ms"},
		retryable: true,
		orphan:    false, // the request never got through
	}.check(t, err)
	assert.True(t, osbclient.IsTimeout(err))
}
