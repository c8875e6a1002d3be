package app

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded"
)

// The embedded broker logs through the manager's logger: one format per
// process.
func TestEmbeddedBrokerLogsThroughTheManagersLogger(t *testing.T) {
	var mu sync.Mutex
	var lines []string
	managers := funcr.NewJSON(func(obj string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, obj)
	}, funcr.Options{})
	logged := func() string {
		mu.Lock()
		defer mu.Unlock()
		return strings.Join(lines, "\n")
	}
	dir := t.TempDir()
	e := &embeddedBroker{
		addr: "127.0.0.1:0", name: "embedded",
		settings: embedded.Settings{Store: "bbolt", BboltPath: filepath.Join(dir, "broker.db"), WorkDir: filepath.Join(dir, "work"),
			Registries: "samples=local:" + filepath.Join(dir, "missing"), SyncPeriod: time.Minute},
		client: fake.NewClientBuilder().WithScheme(Scheme()).Build(),
		logger: brokerLogger(managers),
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Start(ctx) }()
	require.Eventually(t, func() bool { return strings.Contains(logged(), `"registry":"samples"`) }, 30*time.Second, 10*time.Millisecond,
		"a log line of the broker (its registry's failed fetch) in the manager's logger; got:\n%s", logged())
	cancel()
	require.NoError(t, <-done)
	for _, line := range strings.Split(logged(), "\n") {
		assert.Contains(t, line, `"logger":"embedded-broker"`)
	}
}
