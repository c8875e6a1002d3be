package robustness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/lockstep-dev/lockstep/test/robustness/history"
)

func init() {
	// The suite's own watch of lockstep's objects logs nothing.
	ctrllog.SetLogger(logr.Discard())
}

// lockstepBinary is lockstep's binary with the deliberate breaks, built once for
// every run of this package's tests.
var lockstepBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "lockstep-robustness-bin-")
	if err != nil {
		return "", err
	}
	return Build(context.Background(), dir)
})

// options are the options of a test's run: its files in a directory of
// its own, kept after the run.
func options(t *testing.T, seed int64, d time.Duration, p Profile) Options {
	t.Helper()
	bin, err := lockstepBinary()
	require.NoError(t, err, "building lockstep")
	dir, err := os.MkdirTemp("", fmt.Sprintf("lockstep-robustness-%d-", seed))
	require.NoError(t, err)
	return Options{
		Seed: seed, Duration: d, Clients: 4, Namespaces: 3, Profile: p, Async: 0.3, Converge: 5 * time.Minute,
		Dir: dir, Results: filepath.Join(dir, "RESULTS.md"), Binary: bin,
		Log: func(s string) { t.Logf("%s %s", time.Now().Format("15:04:05"), s) },
	}
}

// report fails the test with every violation.
func report(t *testing.T, res *Result) {
	t.Helper()
	t.Logf("results: %s (%d requests, %d faults, %d violations)", res.Options.Results, len(res.Requests), len(res.Faults), len(res.Violations))
	for _, v := range res.Violations {
		t.Error(v.String())
	}
	if res.Converged < 0 {
		t.Errorf("lockstep did not converge within %s of the last fault", res.Options.Converge)
	}
}

// TestRobustness is `make robustness`: a run as long as
// LOCKSTEP_ROBUSTNESS_DURATION with the seed LOCKSTEP_ROBUSTNESS_SEED (the
// time when unset) and the full fault profile (LOCKSTEP_ROBUSTNESS_PROFILE:
// short for the short run's, quiet for none), its results in
// LOCKSTEP_ROBUSTNESS_RESULTS; LOCKSTEP_ROBUSTNESS_CONVERGE bounds the wait
// for convergence (five minutes, or the duration when longer), and
// LOCKSTEP_ROBUSTNESS_FAULTS (kill-leader,broker-slow,...) injects only
// those faults of the profile.
func TestRobustness(t *testing.T) {
	duration := os.Getenv("LOCKSTEP_ROBUSTNESS_DURATION")
	if duration == "" {
		t.Skip("a long run: make robustness (DURATION=10m SEED=...); make test runs TestShortRun")
	}
	d, err := time.ParseDuration(duration)
	require.NoError(t, err, "LOCKSTEP_ROBUSTNESS_DURATION")
	seed := time.Now().UnixNano()
	if s := os.Getenv("LOCKSTEP_ROBUSTNESS_SEED"); s != "" {
		seed, err = strconv.ParseInt(s, 10, 64)
		require.NoError(t, err, "LOCKSTEP_ROBUSTNESS_SEED")
	}
	p := FullProfile()
	switch os.Getenv("LOCKSTEP_ROBUSTNESS_PROFILE") {
	case "short":
		p = ShortProfile()
	case "quiet":
		p = QuietProfile()
	}
	if f := os.Getenv("LOCKSTEP_ROBUSTNESS_FAULTS"); f != "" {
		p.Name, p.Faults = p.Name+" ("+f+")", nil
		for _, k := range strings.Split(f, ",") {
			require.Contains(t, AllFaults, history.FaultKind(k), "LOCKSTEP_ROBUSTNESS_FAULTS names faults of %v", AllFaults)
			p.Faults = append(p.Faults, history.FaultKind(k))
		}
	}
	o := options(t, seed, d, p)
	o.Converge = max(5*time.Minute, d)
	if c := os.Getenv("LOCKSTEP_ROBUSTNESS_CONVERGE"); c != "" {
		o.Converge, err = time.ParseDuration(c)
		require.NoError(t, err, "LOCKSTEP_ROBUSTNESS_CONVERGE")
	}
	if r := os.Getenv("LOCKSTEP_ROBUSTNESS_RESULTS"); r != "" {
		o.Results = r
	}
	res, err := Run(context.Background(), o)
	require.NoError(t, err)
	report(t, res)
	assert.NotEmpty(t, res.Requests)
}
