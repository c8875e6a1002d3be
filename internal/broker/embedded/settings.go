package embedded

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded/executor"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/registry"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/registry/oci"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/store"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/store/bboltstore"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/store/etcdstore"
)

// Settings is the broker's configuration as envconfig reads it (cmd/broker
// uses the prefix LOCKSTEP_BROKER_; split_words turns SyncPeriod into
// SYNC_PERIOD). Open turns it into a ready Broker. Here "0s" means zero:
// SYNC_WINDOW=0s answers 202 at once, SHUTDOWN_GRACE=0s stops actions at
// once, and a period of 0s (or less) disables its loop.
type Settings struct {
	// Username and Password protect the OSB API (basic auth); an empty
	// username disables authentication.
	Username string `desc:"basic-auth username of the OSB API (empty: no authentication)"`
	Password string `desc:"basic-auth password of the OSB API"`

	Store         string   `default:"bbolt" desc:"store backend: bbolt (one file, one broker) or etcd (replicas)"`
	BboltPath     string   `split_words:"true" default:"/var/lib/lockstep-broker/broker.db" desc:"bbolt store file"`
	EtcdEndpoints []string `split_words:"true" desc:"etcd client URLs, comma separated"`
	EtcdPrefix    string   `split_words:"true" default:"/lockstep-broker/" desc:"key prefix in etcd"`
	EtcdUsername  string   `split_words:"true" desc:"etcd username"`
	EtcdPassword  string   `split_words:"true" desc:"etcd password"`

	Registries     string `desc:"registries, comma separated name=kind:location; kinds: local:<directory>, oci:<host/repository>"`
	OCIInsecure    bool   `split_words:"true" desc:"talk plain HTTP to OCI registries"`
	OCIUsername    string `split_words:"true" desc:"OCI registry username"`
	OCIPassword    string `split_words:"true" desc:"OCI registry password"`
	OCIActionsDir  string `split_words:"true" desc:"directory of the action files of OCI-published bundles (<dir>/<bundle name>/)"`
	MaxBundleBytes int64  `split_words:"true" default:"1048576" desc:"largest bundle (all files) accepted"`
	WorkDir        string `split_words:"true" desc:"directory for unpacked bundles and action runs (default: <tmp>/lockstep-broker)"`

	ActionUsers        string        `split_words:"true" desc:"users (and groups) actions run as, one per running action, e.g. 50000-50063; needs CAP_SETUID and CAP_SETGID (empty: the broker's own user)"`
	ActionMaxMemory    string        `split_words:"true" default:"1Gi" desc:"most private memory of each action process (RLIMIT_DATA); bundles asking for more are refused"`
	ActionMaxCPU       time.Duration `envconfig:"ACTION_MAX_CPU" default:"10m" desc:"most CPU time of each action process (RLIMIT_CPU); bundles asking for more are refused"`
	ActionMaxProcesses int           `split_words:"true" default:"128" desc:"most processes and threads of one action at once (RLIMIT_NPROC, with ACTION_USERS); bundles asking for more are refused"`
	ActionMaxTime      time.Duration `split_words:"true" default:"1h" desc:"longest an action may run; bundle timeouts above it are refused"`

	SyncPeriod        time.Duration `split_words:"true" default:"1m" desc:"registry sync period"`
	SweepPeriod       time.Duration `split_words:"true" default:"1m" desc:"period of the sweep of unused removed specs and of job recovery"`
	FailureThreshold  int           `split_words:"true" default:"3" desc:"consecutive failed fetches after which a registry's unused specs are removed"`
	BootstrapTimeout  time.Duration `split_words:"true" default:"2m" desc:"longest wait for every registry at start"`
	JobTimeout        time.Duration `split_words:"true" desc:"action timeout when a bundle sets none (default 10m, or ACTION_MAX_TIME when shorter)"`
	SyncWindow        time.Duration `split_words:"true" default:"2s" desc:"how long a request with accepts_incomplete=true waits before answering 202"`
	SyncTimeout       time.Duration `split_words:"true" default:"1m" desc:"action timeout of a request without accepts_incomplete"`
	HeartbeatInterval time.Duration `split_words:"true" default:"10s" desc:"runner heartbeat period"`
	RunnerTimeout     time.Duration `split_words:"true" default:"1m" desc:"heartbeat age after which another replica's jobs are failed (etcd)"`
	ShutdownGrace     time.Duration `split_words:"true" default:"10s" desc:"how long shutdown lets running actions finish"`
	MaxConcurrentJobs int           `split_words:"true" default:"64" desc:"actions running at once"`
	RetryAfter        time.Duration `split_words:"true" default:"1s" desc:"Retry-After of in-progress last_operation answers"`
}

// RegistryOptions are what ParseRegistries needs besides the spec string.
type RegistryOptions struct {
	MaxBundleBytes int64
	OCI            oci.Options
}

// ParseRegistries reads "name=kind:location,..." (kinds: local, oci).
func ParseRegistries(spec string, opts RegistryOptions) ([]registry.Registry, error) {
	var out []registry.Registry
	var errs []error
	for _, entry := range strings.Split(spec, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		name, rest, ok := strings.Cut(entry, "=")
		kind, location, ok2 := strings.Cut(rest, ":")
		if !ok || !ok2 || name == "" || location == "" {
			errs = append(errs, fmt.Errorf("registry %q: want name=kind:location, e.g. samples=local:/srv/bundles or remote=oci:registry.example/lockstep/bundles", entry))
			continue
		}
		switch kind {
		case "local":
			out = append(out, registry.NewLocal(name, location, opts.MaxBundleBytes))
		case "oci":
			o := opts.OCI
			o.MaxBytes = opts.MaxBundleBytes
			r, err := oci.New(name, location, o)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			out = append(out, r)
		default:
			errs = append(errs, fmt.Errorf("registry %q: unknown kind %q (local or oci)", entry, kind))
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("parse the registries setting: %w", errors.Join(errs...))
	}
	return out, nil
}

// OpenStore opens the configured store.
func (s Settings) OpenStore(ctx context.Context) (store.Store, error) {
	switch s.Store {
	case "bbolt", "":
		return bboltstore.Open(s.BboltPath, bboltstore.Options{})
	case "etcd":
		return etcdstore.Open(ctx, etcdstore.Config{Endpoints: s.EtcdEndpoints, Prefix: s.EtcdPrefix,
			Username: s.EtcdUsername, Password: s.EtcdPassword})
	default:
		return nil, fmt.Errorf("unknown store %q: use bbolt or etcd", s.Store)
	}
}

// Config turns the settings into a Config, opening the store (which the
// Broker then closes).
func (s Settings) Config(ctx context.Context, logger *slog.Logger) (Config, error) {
	users, err := executor.ParseUsers(s.ActionUsers)
	if err != nil {
		return Config{}, fmt.Errorf("the ACTION_USERS setting: %w", err)
	}
	// A maximum left empty or zero is the broker's default.
	var memory resource.Quantity
	if s.ActionMaxMemory != "" {
		if memory, err = resource.ParseQuantity(s.ActionMaxMemory); err != nil || memory.Sign() < 0 {
			return Config{}, fmt.Errorf("the ACTION_MAX_MEMORY setting %q: want a quantity of bytes such as 512Mi or 1Gi", s.ActionMaxMemory)
		}
	}
	if s.ActionMaxCPU < 0 || s.ActionMaxProcesses < 0 || s.ActionMaxTime < 0 {
		return Config{}, fmt.Errorf("the ACTION_MAX_CPU (%s), ACTION_MAX_PROCESSES (%d) and ACTION_MAX_TIME (%s) settings must not be negative",
			s.ActionMaxCPU, s.ActionMaxProcesses, s.ActionMaxTime)
	}
	regs, err := ParseRegistries(s.Registries, RegistryOptions{MaxBundleBytes: s.MaxBundleBytes, OCI: oci.Options{
		Insecure: s.OCIInsecure, Username: s.OCIUsername, Password: s.OCIPassword, ActionsDir: s.OCIActionsDir,
	}})
	if err != nil {
		return Config{}, err
	}
	st, err := s.OpenStore(ctx)
	if err != nil {
		return Config{}, err
	}
	// Config reads zero as "the default"; settings read it as zero.
	zero := func(d time.Duration) time.Duration {
		if d == 0 {
			return -1
		}
		return d
	}
	return Config{
		Store: st, CloseStore: true, Registries: regs, WorkDir: s.WorkDir,
		ActionUsers: users,
		ActionMax:   executor.Limits{Memory: memory.Value(), CPU: s.ActionMaxCPU, Processes: s.ActionMaxProcesses, Time: s.ActionMaxTime},
		Username:    s.Username, Password: s.Password,
		SyncPeriod: zero(s.SyncPeriod), SweepPeriod: zero(s.SweepPeriod), FailureThreshold: s.FailureThreshold,
		BootstrapTimeout: zero(s.BootstrapTimeout), JobTimeout: s.JobTimeout,
		SyncWindow: zero(s.SyncWindow), SyncTimeout: s.SyncTimeout,
		HeartbeatInterval: zero(s.HeartbeatInterval), RunnerTimeout: s.RunnerTimeout,
		ShutdownGrace: zero(s.ShutdownGrace), MaxConcurrentJobs: s.MaxConcurrentJobs, RetryAfter: s.RetryAfter,
		Logger: logger,
	}, nil
}

// Open builds a Broker from the settings; call Start, then serve it.
func (s Settings) Open(ctx context.Context, logger *slog.Logger) (*Broker, error) {
	cfg, err := s.Config(ctx, logger)
	if err != nil {
		return nil, err
	}
	b, err := New(cfg)
	if err != nil {
		_ = cfg.Store.Close()
		return nil, err
	}
	return b, nil
}
