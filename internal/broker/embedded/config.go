package embedded

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/google/uuid"
	"k8s.io/utils/clock"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded/executor"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/registry"
	"github.com/lockstep-dev/lockstep/internal/broker/embedded/store"
)

// Config configures a Broker. Durations left zero take the default named
// in their comment; a negative period disables its background loop (tests
// drive it by calling the method instead), a negative SyncWindow answers
// 202 at once and a negative ShutdownGrace stops actions at once.
type Config struct {
	// Store is required.
	Store store.Store
	// CloseStore makes Close close the store.
	CloseStore bool
	// Registries are the sources of service specs.
	Registries []registry.Registry
	// Executor runs bundle actions; nil means built-ins in process and
	// everything else as local processes under WorkDir, as ActionUsers,
	// within ActionMax, watched so that they end with the broker process,
	// however it ends (executor.Watch).
	Executor executor.Executor
	// process is the default Executor's, when the broker runs its actions
	// as local processes of its own.
	process *executor.Process
	// WorkDir holds unpacked bundles and the private directory of each run;
	// empty means <temp dir>/lockstep-broker.
	WorkDir string
	// ActionUsers, when enabled, are the users actions run as, one per
	// running action (executor.Process.Users): at least MaxConcurrentJobs
	// of them. Without them actions run as the broker's own user.
	ActionUsers executor.Users
	// ActionMax is the most an action may use and how long it may run
	// (executor.Limits); a field left zero is executor.DefaultMax's. A
	// bundle that asks for more is refused when its registry is read.
	ActionMax executor.Limits

	// Username and Password are the basic-auth credentials of the OSB API;
	// an empty Username disables authentication.
	Username string
	Password string

	// SyncPeriod is the registry sync period (1m).
	SyncPeriod time.Duration
	// SweepPeriod is the period of the sweep of unused marked specs and of
	// the recovery of jobs of stopped runners (1m).
	SweepPeriod time.Duration
	// FailureThreshold is the number of consecutive failed fetches after
	// which a registry's unused specs are marked (3).
	FailureThreshold int
	// BootstrapTimeout ends bootstrapping even if a registry never answered
	// (2m).
	BootstrapTimeout time.Duration
	// JobTimeout bounds an action when its bundle sets no timeout (10m, or
	// ActionMax.Time when shorter; never more).
	JobTimeout time.Duration
	// SyncWindow is how long a request with accepts_incomplete=true waits
	// for its action before answering 202 (2s; negative: answer 202 at
	// once).
	SyncWindow time.Duration
	// SyncTimeout bounds the action of a request without
	// accepts_incomplete (1m).
	SyncTimeout time.Duration
	// HeartbeatInterval is how often this runner records it is alive (10s).
	HeartbeatInterval time.Duration
	// RunnerTimeout is the heartbeat age after which, on a shared store,
	// another runner's jobs are failed as orphans (1m).
	RunnerTimeout time.Duration
	// ShutdownGrace is how long Close lets running actions finish (10s;
	// negative: none).
	ShutdownGrace time.Duration
	// MaxConcurrentJobs bounds the actions running at once (64).
	MaxConcurrentJobs int
	// RetryAfter is the Retry-After of in-progress last_operation answers
	// (1s).
	RetryAfter time.Duration
	// RunnerID names this process on its jobs (host-pid-random).
	RunnerID string

	Logger *slog.Logger
	// Clock reads the time of the broker's records; the real clock when
	// nil.
	Clock clock.PassiveClock
}

func (c *Config) applyDefaults() error {
	if c.Store == nil {
		return errors.New("configure the broker: a store is required")
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&c.SyncPeriod, time.Minute)
	def(&c.SweepPeriod, time.Minute)
	def(&c.BootstrapTimeout, 2*time.Minute)
	def(&c.SyncTimeout, time.Minute)
	def(&c.HeartbeatInterval, 10*time.Second)
	def(&c.RunnerTimeout, time.Minute)
	def(&c.ShutdownGrace, 10*time.Second)
	def(&c.RetryAfter, time.Second)
	def(&c.SyncWindow, 2*time.Second)
	c.SyncWindow = max(c.SyncWindow, 0)
	c.ShutdownGrace = max(c.ShutdownGrace, 0)
	if c.FailureThreshold <= 0 {
		c.FailureThreshold = 3
	}
	if c.MaxConcurrentJobs <= 0 {
		c.MaxConcurrentJobs = 64
	}
	maxDef := func(v, d int64) int64 {
		if v <= 0 {
			return d
		}
		return v
	}
	m, d := &c.ActionMax, executor.DefaultMax
	m.Memory = maxDef(m.Memory, d.Memory)
	m.CPU = time.Duration(maxDef(int64(m.CPU), int64(d.CPU)))
	m.Processes = int(maxDef(int64(m.Processes), int64(d.Processes)))
	m.Time = time.Duration(maxDef(int64(m.Time), int64(d.Time)))
	def(&c.JobTimeout, min(10*time.Minute, m.Time))
	if c.JobTimeout > m.Time {
		return fmt.Errorf("configure the broker: the action timeout %s (JOB_TIMEOUT) is more than the longest an action may run, %s (ACTION_MAX_TIME)", c.JobTimeout, m.Time)
	}
	if c.ActionUsers.Enabled() && c.ActionUsers.Count < c.MaxConcurrentJobs {
		return fmt.Errorf("configure the broker: the action users %s (ACTION_USERS) are %d, fewer than the actions that may run at once (MAX_CONCURRENT_JOBS %d): each running action needs one",
			c.ActionUsers, c.ActionUsers.Count, c.MaxConcurrentJobs)
	}
	if c.WorkDir == "" {
		c.WorkDir = filepath.Join(os.TempDir(), "lockstep-broker")
	}
	if c.RunnerID == "" {
		host, _ := os.Hostname()
		c.RunnerID = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), uuid.NewString()[:8])
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.Executor == nil {
		c.process = &executor.Process{WorkDir: c.WorkDir, RunnerID: c.RunnerID, Users: c.ActionUsers, Max: c.ActionMax, Logger: c.Logger}
		c.Executor = executor.Mux{Process: c.process}
	}
	names := map[string]bool{}
	for _, r := range c.Registries {
		if names[r.Name()] {
			return fmt.Errorf("configure the broker: two registries are named %q; names must be unique", r.Name())
		}
		names[r.Name()] = true
	}
	return nil
}
