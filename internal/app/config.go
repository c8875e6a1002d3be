package app

import (
	"fmt"
	"time"

	"github.com/kelseyhightower/envconfig"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// Config is every setting of the webhook binary, read from the environment
// with the prefix LOCKSTEP_ (LOCKSTEP_WEBHOOK_PORT, ...). The
// configuration reference (docs/reference/configuration.md) documents
// each one.
type Config struct {
	// WebhookHost is the address the webhook server binds to; empty means
	// every interface.
	WebhookHost string `split_words:"true" default:""`
	// WebhookPort is the webhook server's TLS port.
	WebhookPort int `split_words:"true" default:"9443"`
	// CertDir holds tls.crt and tls.key; they are reloaded when they change.
	CertDir string `split_words:"true" default:"certs"`
	// MetricsAddr serves Prometheus metrics at /metrics; "0" disables it.
	MetricsAddr string `split_words:"true" default:":8443"`
	// MetricsSecure serves the metrics over HTTPS (the serving certificate
	// of CertDir) to clients that authenticate with a token the API server
	// knows and may get /metrics (a TokenReview and a SubjectAccessReview
	// per client, cached); false serves plain HTTP to anyone, and only on
	// a loopback address (a local run).
	MetricsSecure bool `split_words:"true" default:"true"`
	// EnableHTTP2 lets the webhook and metrics servers speak HTTP/2; off,
	// they offer HTTP/1.1 only (an HTTP/2 client's stream resets cannot
	// tie up the servers).
	EnableHTTP2 bool `envconfig:"ENABLE_HTTP2" default:"false"`
	// TLSMinVersion is the oldest TLS version the webhook and metrics
	// servers accept: 1.2 or 1.3.
	TLSMinVersion string `envconfig:"TLS_MIN_VERSION" default:"1.2"`
	// HealthAddr serves /healthz and /readyz; "0" disables it.
	HealthAddr string `split_words:"true" default:":8081"`
	// PprofAddr serves Go's profiles at /debug/pprof/ (for a profile of a
	// running replica); "" or "0" disables it.
	PprofAddr string `split_words:"true" default:""`
	// AdmissionBudget is how long the validating webhook may spend on one
	// request, broker calls included. Keep it below the webhook
	// configuration's timeoutSeconds (30s).
	AdmissionBudget time.Duration `split_words:"true" default:"25s"`
	// BrokerTimeout bounds each single request to a broker.
	BrokerTimeout time.Duration `split_words:"true" default:"20s"`
	// PollInterval is the first wait between last_operation polls; it
	// doubles up to PollMaxInterval unless the broker sends Retry-After.
	PollInterval time.Duration `split_words:"true" default:"1s"`
	// PollMaxInterval caps the wait between polls.
	PollMaxInterval time.Duration `split_words:"true" default:"5s"`
	// LockDuration is how long an object's lock lasts without renewal
	// (a lock whose holder died expires after it).
	LockDuration time.Duration `split_words:"true" default:"60s"`
	// LockWait is how long a change waits for another operation on the same
	// object to be committed before it is refused with 409.
	LockWait time.Duration `split_words:"true" default:"3s"`
	// CommitGrace is how long after the broker's answer an object the API
	// server did not persist counts as never persisted (then compensated).
	CommitGrace time.Duration `split_words:"true" default:"10s"`
	// RefusalMemory is how long a broker's refusal is repeated to an
	// identical request without asking the broker again (the API server
	// retries a request whose cached state was stale).
	RefusalMemory time.Duration `split_words:"true" default:"1s"`
	// KeepOperations is how many BrokerOperations are kept per object.
	KeepOperations int `split_words:"true" default:"10"`
	// OperationRetention is how long the final BrokerOperations of an
	// object that no longer exists are kept; 0 keeps them for ever.
	OperationRetention time.Duration `split_words:"true" default:"168h"`
	// ResyncInterval is how often each instance and binding is read again
	// from its broker and compared with what lockstep last applied
	// (jittered to 90-100% of it); 0 turns resync off.
	ResyncInterval time.Duration `split_words:"true" default:"10m"`
	// ResyncBrokerConcurrency bounds the resync fetches in flight at one
	// broker.
	ResyncBrokerConcurrency int `split_words:"true" default:"4"`
	// ResyncBrokerQPS bounds the resync fetches per second at one broker.
	ResyncBrokerQPS float64 `envconfig:"RESYNC_BROKER_QPS" default:"10"`
	// CatalogRefreshInterval is the least time between two catalog
	// refreshes triggered by a request naming an unknown service or plan,
	// or by a broker refusing service or plan ids its catalog may no
	// longer have.
	CatalogRefreshInterval time.Duration `split_words:"true" default:"10s"`
	// MaxParametersBytes is the largest the parameters sent to a broker
	// may be (spec.parameters with those from Secrets merged in, as JSON);
	// larger ones are refused before any broker call.
	MaxParametersBytes int `split_words:"true" default:"65536"`
	// Preflight tries every change lockstep is about to carry out at a
	// broker first as a server-side dry run of the same request, so that
	// what the rest of admission refuses after lockstep (other webhooks,
	// policies, quotas) is refused with nothing sent to the broker; a
	// ServiceBroker's spec.preflight overrides it for its broker.
	Preflight bool `split_words:"true" default:"false"`
	// Namespace is lockstep's own namespace: the per-object locks live
	// there, and so do the operation records of deletes in a namespace
	// that is being deleted. The Deployment sets it to the pod's
	// namespace; unset, it is v1alpha1.DefaultNamespace.
	Namespace string
	// LeaderElection runs the reconcilers that change state (operations,
	// finalizers) in one replica at a time, elected through a Lease in
	// Namespace; every replica serves the webhooks and keeps its catalog
	// cache. Off only for a single process that knows it is alone.
	LeaderElection bool `split_words:"true" default:"true"`
	// LeaderElectionLeaseDuration is how long a leader that stopped
	// renewing keeps the lead: the longest a failover takes.
	LeaderElectionLeaseDuration time.Duration `split_words:"true" default:"15s"`
	// LeaderElectionRenewDeadline is how long the leader tries to renew
	// before it gives the lead up.
	LeaderElectionRenewDeadline time.Duration `split_words:"true" default:"10s"`
	// LeaderElectionRetryPeriod is how often replicas try to take the lead.
	LeaderElectionRetryPeriod time.Duration `split_words:"true" default:"2s"`
	// ClusterID is sent to brokers in the OSB context (clusterid).
	ClusterID string `envconfig:"CLUSTER_ID" default:""`
	// StatusWriters are usernames allowed to write the status of lockstep
	// objects besides lockstep's own identity (found at start).
	StatusWriters []string `split_words:"true"`
	// EmbeddedBroker runs lockstep's own OSB broker in this process and
	// registers it as a ServiceBroker (see internal/broker/embedded for its
	// LOCKSTEP_EMBEDDED_BROKER_* settings): for make run and the tests. In a
	// cluster the broker runs in a Deployment of its own (cmd/broker), so
	// that its actions never run in lockstep's pods.
	EmbeddedBroker bool `split_words:"true" default:"false"`
	// EmbeddedBrokerAddr is where the embedded broker listens.
	EmbeddedBrokerAddr string `split_words:"true" default:"127.0.0.1:8099"`
	// EmbeddedBrokerName is the ServiceBroker registered for it.
	EmbeddedBrokerName string `split_words:"true" default:"embedded"`
	// LogLevel is debug, info or error.
	LogLevel string `split_words:"true" default:"info"`
	// LogFormat is json or console.
	LogFormat string `split_words:"true" default:"json"`
}

// Prefix is the environment variable prefix of Config.
const Prefix = "lockstep"

// LoadConfig reads Config from the environment and checks it.
func LoadConfig() (Config, error) {
	var c Config
	if err := envconfig.Process(Prefix, &c); err != nil {
		return c, fmt.Errorf("reading configuration from LOCKSTEP_* environment variables: %w", err)
	}
	if c.Namespace == "" {
		c.Namespace = v1alpha1.DefaultNamespace
	}
	return c, c.Validate()
}

// Validate reports settings that cannot work, naming the variable.
func (c Config) Validate() error {
	switch {
	case c.WebhookPort <= 0 || c.WebhookPort > 65535:
		return fmt.Errorf("LOCKSTEP_WEBHOOK_PORT=%d: must be a TCP port between 1 and 65535", c.WebhookPort)
	case c.CertDir == "":
		return fmt.Errorf("LOCKSTEP_CERT_DIR is empty: it must name the directory with tls.crt and tls.key (run `make certs` for local ones)")
	case c.AdmissionBudget <= 0 || c.AdmissionBudget >= 30*time.Second:
		return fmt.Errorf("LOCKSTEP_ADMISSION_BUDGET=%s: must be more than 0 and less than the webhook timeout of 30s", c.AdmissionBudget)
	case c.BrokerTimeout <= 0:
		return fmt.Errorf("LOCKSTEP_BROKER_TIMEOUT=%s: must be more than 0", c.BrokerTimeout)
	case c.PollInterval <= 0 || c.PollMaxInterval < c.PollInterval:
		return fmt.Errorf("LOCKSTEP_POLL_INTERVAL=%s, LOCKSTEP_POLL_MAX_INTERVAL=%s: both must be more than 0, the maximum at least the first", c.PollInterval, c.PollMaxInterval)
	case c.LockDuration <= c.AdmissionBudget:
		return fmt.Errorf("LOCKSTEP_LOCK_DURATION=%s: must be longer than LOCKSTEP_ADMISSION_BUDGET=%s, or a lock could expire under a running admission", c.LockDuration, c.AdmissionBudget)
	case c.LeaderElection && (c.LeaderElectionRetryPeriod <= 0 || c.LeaderElectionRenewDeadline <= c.LeaderElectionRetryPeriod ||
		c.LeaderElectionLeaseDuration <= c.LeaderElectionRenewDeadline):
		return fmt.Errorf("LOCKSTEP_LEADER_ELECTION_LEASE_DURATION=%s, _RENEW_DEADLINE=%s, _RETRY_PERIOD=%s: each must be longer than the next, and all more than 0",
			c.LeaderElectionLeaseDuration, c.LeaderElectionRenewDeadline, c.LeaderElectionRetryPeriod)
	case c.ResyncInterval < 0 || c.ResyncInterval > 0 && (c.ResyncBrokerConcurrency <= 0 || c.ResyncBrokerQPS <= 0):
		return fmt.Errorf("LOCKSTEP_RESYNC_INTERVAL=%s, _BROKER_CONCURRENCY=%d, _BROKER_QPS=%g: the interval must be 0 (off) or more, the limits more than 0",
			c.ResyncInterval, c.ResyncBrokerConcurrency, c.ResyncBrokerQPS)
	case c.MaxParametersBytes <= 0:
		return fmt.Errorf("LOCKSTEP_MAX_PARAMETERS_BYTES=%d: must be more than 0", c.MaxParametersBytes)
	case c.OperationRetention < 0:
		return fmt.Errorf("LOCKSTEP_OPERATION_RETENTION=%s: must be 0 (keep for ever) or more", c.OperationRetention)
	case c.Namespace == "":
		return fmt.Errorf("LOCKSTEP_NAMESPACE is empty: it must name lockstep's own namespace (where its locks live)")
	case c.LogLevel != "debug" && c.LogLevel != "info" && c.LogLevel != "error":
		return fmt.Errorf("LOCKSTEP_LOG_LEVEL=%q: must be debug, info or error", c.LogLevel)
	case c.LogFormat != "json" && c.LogFormat != "console":
		return fmt.Errorf("LOCKSTEP_LOG_FORMAT=%q: must be json or console", c.LogFormat)
	}
	if _, ok := tlsVersions[c.TLSMinVersion]; !ok {
		return fmt.Errorf("LOCKSTEP_TLS_MIN_VERSION=%q: must be 1.2 or 1.3", c.TLSMinVersion)
	}
	if !c.MetricsSecure && c.MetricsAddr != "0" && !loopback(c.MetricsAddr) {
		return fmt.Errorf("LOCKSTEP_METRICS_SECURE=false with LOCKSTEP_METRICS_ADDR=%q: plain HTTP without authentication is served only on a loopback address (127.0.0.1:PORT); "+
			"leave LOCKSTEP_METRICS_SECURE at true to serve the metrics over HTTPS to authorized clients", c.MetricsAddr)
	}
	return nil
}
