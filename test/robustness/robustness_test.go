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

	"github.com/lockstep-dev/lockstep/internal/breaks"
	"github.com/lockstep-dev/lockstep/test/robustness/check"
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

// shortSeed is the seed of the short run of make test.
const shortSeed = 1

// TestShortRun is the short run of make test: traffic from four clients
// under every kind of fault for 75 seconds, with the short profile (what
// shows the known findings held back), and not one promise broken.
func TestShortRun(t *testing.T) {
	res, err := Run(context.Background(), options(t, shortSeed, 75*time.Second, ShortProfile()))
	require.NoError(t, err)
	report(t, res)
}

// TestDeliberateBreaks: with one of lockstep's promises broken on purpose
// (internal/breaks, compiled into the suite's binary only), a short run
// fails, with a violation that says what happened and where to look.
func TestDeliberateBreaks(t *testing.T) {
	for _, tt := range []struct {
		b    breaks.Break
		want check.Invariant
	}{
		{breaks.AllowRefused, check.TrueAnswers},
		{breaks.PollErrorFails, check.TrueAnswers},
		{breaks.LogCredentials, check.NoCredentials},
	} {
		t.Run(string(tt.b), func(t *testing.T) {
			o := options(t, shortSeed, 20*time.Second, BreakProfile(tt.b))
			o.Break, o.Converge = tt.b, 30*time.Second
			res, err := Run(context.Background(), o)
			require.NoError(t, err)
			var caught []Violation
			for _, v := range res.Violations {
				if v.Invariant == tt.want {
					caught = append(caught, v)
				}
			}
			require.NotEmpty(t, caught, "with %s broken, the run finds no violation of %q; it found: %v", tt.b, tt.want, res.Violations)
			t.Logf("with %s broken, the run fails with %d violation(s) of %q (results: %s); the first:\n%s",
				tt.b, len(caught), tt.want, o.Results, caught[0])
			assert.Contains(t, caught[0].String(), fmt.Sprintf("seed %d", shortSeed), "it names the seed")
			assert.Contains(t, caught[0].String(), "replay: make robustness SEED=", "and how to replay it")
		})
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
	o.Clients = 12
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
