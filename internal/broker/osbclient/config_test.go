package osbclient_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/internal/broker/fakebroker"
	"github.com/lockstep-dev/lockstep/internal/broker/osbclient"
)

func TestNewValidatesConfig(t *testing.T) {
	tlsBroker := fakebroker.New(t, fakebroker.WithTLS())
	tests := []struct {
		name    string
		cfg     osbclient.Config
		wantErr string // empty: valid
	}{
		{name: "http", cfg: osbclient.Config{URL: "http://broker.example"}},
		{name: "https with path prefix and trailing slash", cfg: osbclient.Config{URL: "https://broker.example/osb/"}},
		{name: "https with CA bundle", cfg: osbclient.Config{URL: "https://broker.example", CABundle: tlsBroker.CABundle()}},
		{name: "basic auth", cfg: osbclient.Config{URL: "https://b", Auth: osbclient.BasicAuth("u", "p")}},
		{name: "bearer auth", cfg: osbclient.Config{URL: "https://b", Auth: osbclient.BearerAuth("t")}},
		{name: "basic auth over plain http", cfg: osbclient.Config{URL: "http://b", Auth: osbclient.BasicAuth("u", "p")},
			wantErr: "broker URL http://b is plain http: lockstep sends credentials (basic auth) only over https, or to a loopback address"},
		{name: "a bearer token over plain http", cfg: osbclient.Config{URL: "http://broker.example:8080/osb", Auth: osbclient.BearerAuth("t")},
			wantErr: "lockstep sends credentials (bearer token) only over https"},
		{name: "a host named like loopback is not", cfg: osbclient.Config{URL: "http://127.0.0.1.example", Auth: osbclient.BasicAuth("u", "p")},
			wantErr: "is plain http"},
		{name: "basic auth over http to 127.0.0.1", cfg: osbclient.Config{URL: "http://127.0.0.1:8099", Auth: osbclient.BasicAuth("u", "p")}},
		{name: "basic auth over http to localhost", cfg: osbclient.Config{URL: "http://localhost:8099", Auth: osbclient.BasicAuth("u", "p")}},
		{name: "basic auth over http to ::1", cfg: osbclient.Config{URL: "http://[::1]:8099", Auth: osbclient.BasicAuth("u", "p")}},
		{name: "empty URL", cfg: osbclient.Config{}, wantErr: "broker URL is empty"},
		{name: "unparsable URL", cfg: osbclient.Config{URL: "http://[::1"}, wantErr: "broker URL cannot be parsed"},
		{name: "ftp", cfg: osbclient.Config{URL: "ftp://broker.example"}, wantErr: `has scheme "ftp"; use http or https`},
		{name: "no scheme", cfg: osbclient.Config{URL: "broker.example"}, wantErr: `has scheme ""`},
		{name: "no host", cfg: osbclient.Config{URL: "http:///path"}, wantErr: "has no host"},
		{name: "credentials in URL", cfg: osbclient.Config{URL: "https://admin:hunter2@broker.example"}, wantErr: "broker URL carries credentials; remove them from the URL and set Auth instead"},
		{name: "query", cfg: osbclient.Config{URL: "https://broker.example/?x=1"}, wantErr: "has a query or fragment"},
		{name: "basic and bearer", cfg: osbclient.Config{URL: "https://b", Auth: osbclient.Auth{Username: "u", Password: "p", Token: "t"}}, wantErr: "both basic credentials and a bearer token"},
		{name: "username without password", cfg: osbclient.Config{URL: "https://b", Auth: osbclient.Auth{Username: "u"}}, wantErr: "username but no password"},
		{name: "password without username", cfg: osbclient.Config{URL: "https://b", Auth: osbclient.Auth{Password: "hunter2"}}, wantErr: "password but no username"},
		{name: "colon in username", cfg: osbclient.Config{URL: "https://b", Auth: osbclient.BasicAuth("a:b", "p")}, wantErr: "contains ':'"},
		{name: "negative timeout", cfg: osbclient.Config{URL: "http://b", Timeout: -time.Second}, wantErr: "timeout -1s is negative"},
		{name: "negative size", cfg: osbclient.Config{URL: "http://b", MaxResponseBytes: -1}, wantErr: "max response size -1 is negative"},
		{name: "CA bundle with http", cfg: osbclient.Config{URL: "http://b", CABundle: tlsBroker.CABundle()}, wantErr: "CA bundle is set but URL http://b is not https"},
		{name: "CA bundle without PEM", cfg: osbclient.Config{URL: "https://b", CABundle: []byte("not a certificate")}, wantErr: "CA bundle holds no PEM certificate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := osbclient.New(tt.cfg)
			if tt.wantErr == "" {
				require.NoError(t, err)
				c.Close()
				assert.False(t, strings.HasSuffix(c.URL(), "/"))
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), "invalid broker config: ")
			assert.Contains(t, err.Error(), tt.wantErr)
			assert.NotContains(t, err.Error(), "hunter2")
		})
	}
}

func TestConfigNeverPrintsCredentials(t *testing.T) {
	for _, auth := range []osbclient.Auth{osbclient.BasicAuth("user-x", "pass-secret"), osbclient.BearerAuth("token-secret")} {
		cfg := osbclient.Config{URL: "https://b.example", Auth: auth, Timeout: time.Second}
		for _, format := range []string{"%v", "%+v", "%#v", "%s"} {
			for _, v := range []any{cfg, &cfg, auth, &auth} {
				out := fmt.Sprintf(format, v)
				assert.NotContains(t, out, "secret", "%s of %T", format, v)
			}
		}
		c, err := osbclient.New(cfg)
		require.NoError(t, err)
		assert.NotContains(t, fmt.Sprintf("%v %+v %s", c, c, c), "secret")
		c.Close()
	}
	assert.Equal(t, "broker https://b.example (basic auth, CA bundle not set, timeout 1s, max response 0 bytes)",
		osbclient.Config{URL: "https://b.example", Auth: osbclient.BasicAuth("u", "p"), Timeout: time.Second}.String())
	assert.Contains(t, osbclient.Config{URL: "https://u:pw@b.example"}.String(), "https://b.example (credentials removed)")
}

func TestAuthKind(t *testing.T) {
	assert.Equal(t, osbclient.AuthNone, osbclient.Auth{}.Kind())
	assert.Equal(t, osbclient.AuthBasic, osbclient.BasicAuth("u", "p").Kind())
	assert.Equal(t, osbclient.AuthBearer, osbclient.BearerAuth("t").Kind())
	assert.Equal(t, "no auth", osbclient.Auth{}.String())
}
