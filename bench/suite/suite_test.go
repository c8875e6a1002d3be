package suite

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/bench/env"
	"github.com/lockstep-dev/lockstep/bench/report"
	"github.com/lockstep-dev/lockstep/test/framework"
)

// TestSuiteTiny runs every benchmark once at tiny sizes, strictly (any
// unexpected answer fails), to prove that the harness works. It asserts
// what was measured, never how fast: the figures of a tiny run mean
// nothing. The benchmarks that need kube-apiserver are skipped when
// KUBEBUILDER_ASSETS is unset.
func TestSuiteTiny(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the harness test starts a control plane and builds binaries")
	}
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute) // a bound for a loaded machine, not a target
	defer cancel()

	s := &Suite{Root: root, Sizes: Tiny(), Progress: framework.TestLog{T: t}, GoFlags: raceFlags, Strict: true}
	defer s.Close()
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets != "" {
		e, err := env.Start(ctx, env.Options{Root: root, Assets: assets, Progress: framework.TestLog{T: t}, BuildFlags: raceFlags})
		require.NoError(t, err)
		defer func() { assert.NoError(t, e.Stop()) }()
		s.Env = e
	}

	rep := report.Report{Title: "tiny", Started: time.Now(), Machine: report.DetectMachine(ctx, root, assets)}
	for _, b := range Benchmarks() {
		t.Run(b.Name, func(t *testing.T) {
			if b.NeedsEnv && s.Env == nil {
				t.Skipf("KUBEBUILDER_ASSETS is unset: benchmark %s needs kube-apiserver and etcd (`make test` sets it; "+
					"or export KUBEBUILDER_ASSETS=$(bash hack/testbin.sh))", b.Name)
			}
			sections, errs := s.Run(ctx, []Benchmark{b})
			require.Empty(t, errs)
			require.Len(t, sections, 1)
			sec := sections[0]
			assert.NotEmpty(t, sec.Title)
			assert.NotEmpty(t, sec.Text, "a section says what it measured")
			rows := 0
			for _, table := range sec.Tables {
				rows += len(table.Rows)
				for _, row := range table.Rows {
					assert.Len(t, row, len(table.Header), "table %q", table.Caption)
					for _, cell := range row {
						assert.NotContains(t, cell, "unexpected", "table %q", table.Caption)
					}
				}
			}
			assert.Positive(t, rows, "the benchmark measured something")
			for _, target := range sec.Targets {
				assert.NotEqual(t, report.NotMeasured, target.Status, "%s: %s", target.What, target.Got)
			}
			rep.Sections = append(rep.Sections, sec)
		})
	}
	md := string(rep.Markdown())
	for _, sec := range rep.Sections {
		assert.Contains(t, md, "## "+sec.Title)
	}
}

func TestAdmissionRounds(t *testing.T) {
	tests := []struct{ requests, concurrency, least, want int }{
		{3000, 1, 6, 30}, // capped
		{3000, 8, 6, 30}, // 37 would leave 10 a worker: capped
		{3000, 64, 6, 6}, // 4 would be enough per worker, the least wins
		{600, 8, 6, 7},   // 7 rounds of 85: 10 a worker
		{10, 1, 2, 2},    // tiny sizes
	}
	for _, tt := range tests {
		if got := admissionRounds(tt.requests, tt.concurrency, tt.least); got != tt.want {
			t.Errorf("admissionRounds(%d, %d, %d) = %d, want %d", tt.requests, tt.concurrency, tt.least, got, tt.want)
		}
	}
}

func TestAdmissionRequests(t *testing.T) {
	full := Full()
	for _, tt := range []struct{ concurrency, want int }{{1, 6000}, {8, 6000}, {64, 19200}} {
		got := admissionRequests(full, tt.concurrency)
		if got != tt.want {
			t.Errorf("admissionRequests(Full, %d) = %d, want %d", tt.concurrency, got, tt.want)
		}
		if rounds := admissionRounds(got, tt.concurrency, full.Rounds); rounds != maxAdmissionRounds {
			t.Errorf("at concurrency %d: %d rounds, want %d", tt.concurrency, rounds, maxAdmissionRounds)
		}
	}
	if got := admissionRequests(Tiny(), 8); got != Tiny().AdmissionRequests {
		t.Errorf("admissionRequests(Tiny, 8) = %d, want Tiny's own %d", got, Tiny().AdmissionRequests)
	}
	if got, want := requestCounts(full), "6000 at concurrency 1, 6000 at 8 and 19200 at 64"; got != want {
		t.Errorf("requestCounts(Full) = %q, want %q", got, want)
	}
	if got, want := requestCounts(Tiny()), "20"; got != want {
		t.Errorf("requestCounts(Tiny) = %q, want %q", got, want)
	}
}

// TestRequestCountsNamesWhatIsSent checks the text when every level gets
// the same count, raised above AdmissionRequests.
func TestRequestCountsNamesWhatIsSent(t *testing.T) {
	sz := Full()
	sz.Concurrency = []int{64}
	if got, want := requestCounts(sz), "19200"; got != want {
		t.Errorf("requestCounts(only 64) = %q, want %q", got, want)
	}
}
