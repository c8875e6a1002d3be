package framework

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/app"
)

// Config is lockstep's configuration for a suite: budgets, polls and locks
// short enough for tests, no metrics or health server, debug logs for a
// person looking into a failure. A suite changes what it needs.
func Config() app.Config {
	return app.Config{
		Namespace:              v1alpha1.DefaultNamespace,
		MetricsAddr:            "0",
		MetricsSecure:          true,
		TLSMinVersion:          "1.2",
		HealthAddr:             "0",
		AdmissionBudget:        5 * time.Second,
		BrokerTimeout:          3 * time.Second,
		PollInterval:           50 * time.Millisecond,
		PollMaxInterval:        200 * time.Millisecond,
		LockDuration:           time.Minute,
		LockWait:               3 * time.Second,
		CommitGrace:            5 * time.Second,
		RefusalMemory:          300 * time.Millisecond,
		KeepOperations:         10,
		CatalogRefreshInterval: time.Second,
		MaxParametersBytes:     64 << 10,
		LogLevel:               "debug",
		LogFormat:              "console",
	}
}

// ServeSamples makes cfg run lockstep's embedded broker, registered as the
// ServiceBroker "embedded", serving examples/bundles with its state in the
// control plane's directory, as `make run` does. The embedded broker reads
// its own settings from the environment: ServeSamples sets them for the
// test's process.
func (cp *ControlPlane) ServeSamples(cfg *app.Config) error {
	state := filepath.Join(cp.Dir, "broker")
	if err := os.MkdirAll(state, 0o700); err != nil {
		return fmt.Errorf("creating the embedded broker's directory: %w", err)
	}
	for k, v := range map[string]string{
		"LOCKSTEP_EMBEDDED_BROKER_REGISTRIES": "samples=local:" + filepath.Join(cp.Root, "examples", "bundles"),
		"LOCKSTEP_EMBEDDED_BROKER_BBOLT_PATH": filepath.Join(state, "broker.db"),
		"LOCKSTEP_EMBEDDED_BROKER_WORK_DIR":   filepath.Join(state, "work"),
	} {
		if err := os.Setenv(k, v); err != nil {
			return err
		}
	}
	cfg.EmbeddedBroker, cfg.EmbeddedBrokerAddr, cfg.EmbeddedBrokerName = true, "127.0.0.1:0", "embedded"
	return nil
}
