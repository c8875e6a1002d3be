package deploy

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestMetricsNeedAReaderToken: lockstep, running as its service account
// with the deployed RBAC, serves its metrics over HTTPS to a client whose
// token the API server authenticates and that may get /metrics (the
// ClusterRole lockstep-metrics-reader of deploy/rbac): without a token
// the answer is 401, with the token of an account without the role 403,
// and with the token of an account bound to it, the metrics.
func TestMetricsNeedAReaderToken(t *testing.T) {
	ctx := begin(t)
	c := env.admin
	cs, err := kubernetes.NewForConfig(env.config)
	require.NoError(t, err)
	const ns = "monitoring"
	require.NoError(t, client.IgnoreAlreadyExists(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})))
	token := func(name string) string {
		require.NoError(t, client.IgnoreAlreadyExists(c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})))
		tok, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name,
			&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(3600))}}, metav1.CreateOptions{})
		require.NoError(t, err)
		return tok.Status.Token
	}
	require.NoError(t, client.IgnoreAlreadyExists(c.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "prometheus-reads-lockstep"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "lockstep-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "prometheus"}},
	})))
	reader, stranger := token("prometheus"), token("stranger")

	ca := x509.NewCertPool()
	require.True(t, ca.AppendCertsFromPEM(env.ca))
	httpClient := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca}}}
	scrape := func(token string) (int, string) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+env.metricsAddr+"/metrics", nil)
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := httpClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer func() { _ = resp.Body.Close() }()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	eventually(t, "the metrics server answers", func() bool {
		code, _ := scrape("")
		return code != 0
	})
	code, body := scrape("")
	assert.Equal(t, http.StatusUnauthorized, code, "without a token: %s", body)
	code, body = scrape(stranger)
	assert.Equal(t, http.StatusForbidden, code, "an account that may not get /metrics: %s", body)
	code, body = scrape(reader)
	assert.Equal(t, http.StatusOK, code, "an account bound to lockstep-metrics-reader: %.300s", body)
	assert.Contains(t, body, "lockstep_webhook_certificate_expiry_timestamp_seconds", "lockstep's own metrics")
	assert.NotContains(t, env.logs.String(), "Authentication failed", "lockstep may ask the API server about tokens")
}

// TestNoHTTP2 connects to lockstep's webhook and metrics servers as a
// client that prefers HTTP/2: both answer in HTTP/1.1, as the deployment
// runs them.
func TestNoHTTP2(t *testing.T) {
	ca := x509.NewCertPool()
	require.True(t, ca.AppendCertsFromPEM(env.ca))
	for server, addr := range map[string]string{"webhook": env.webhookAddr, "metrics": env.metricsAddr} {
		t.Run(server, func(t *testing.T) {
			host, _, err := net.SplitHostPort(addr)
			require.NoError(t, err)
			conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", addr,
				&tls.Config{RootCAs: ca, ServerName: host, NextProtos: []string{"h2", "http/1.1"}})
			require.NoError(t, err)
			defer func() { _ = conn.Close() }()
			assert.Equal(t, "http/1.1", conn.ConnectionState().NegotiatedProtocol)
			assert.GreaterOrEqual(t, conn.ConnectionState().Version, uint16(tls.VersionTLS12))
		})
	}
}
